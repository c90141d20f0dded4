import type { KubeClient } from "@kubevirt-ts/kube";
import {
  Causes,
  SUBRESOURCE_GROUP,
  type VirtualMachine,
  expandVirtualMachine,
  expansionSources,
  findInstancetypeAndPreference,
  kubevirtResources,
  parseVirtualMachine,
  summarize,
} from "@kubevirt-ts/kubevirt-api";
import type { Check, Requester } from "../access.ts";
import { ActionRefusal, authorize, parseRequestJson } from "../vm-actions.ts";

// KubeVirt's expand-spec: a VM as its instancetype and preference expand it
// (virtctl expand, and client-go's GetWithExpandedSpec and ExpandSpec). The
// user needs get on virtualmachines/expand-spec for a stored VM, or update on
// expand-vm-spec for one sent in the body; the instancetype and preference
// are read with the API's own account, as for admission. The status codes are
// KubeVirt's: for a stored VM a failed expansion is a 500, for a sent one 400.

export const EXPAND_SPEC_CHECK: Check = {
  verb: "get",
  group: SUBRESOURCE_GROUP,
  resource: "virtualmachines",
  subresource: "expand-spec",
};
export const EXPAND_VM_SPEC_CHECK: Check = { verb: "update", group: SUBRESOURCE_GROUP, resource: "expand-vm-spec" };

async function expand(own: KubeClient, vm: VirtualMachine, failure: number): Promise<VirtualMachine> {
  const found = await findInstancetypeAndPreference(vm, (resource, namespace, name) =>
    own.find(resource, namespace, name),
  );
  if (found.problems.length > 0) throw new ActionRefusal(failure, found.problems.map((p) => p.message).join("; "));
  const causes = new Causes();
  const expanded = expandVirtualMachine(vm, expansionSources(found), causes);
  if (causes.list.length > 0) throw new ActionRefusal(failure, summarize(causes.list));
  return expanded;
}

/** GET virtualmachines/{name}/expand-spec: the stored VM, expanded. */
export async function expandStoredVm(
  own: KubeClient,
  requester: Requester,
  namespace: string,
  name: string,
): Promise<VirtualMachine> {
  await authorize(requester, { namespace, name }, EXPAND_SPEC_CHECK);
  const vm = await own.find<VirtualMachine>(kubevirtResources.virtualMachines, namespace, name);
  if (!vm)
    throw new ActionRefusal(404, `virtualmachine.kubevirt.io "${name}" not found`, { name, kind: "virtualmachine" });
  return expand(own, vm, 500);
}

/** PUT expand-vm-spec: the VM in the body, expanded in `namespace` (the body's namespace must be that one or none). */
export async function expandSentVm(
  own: KubeClient,
  requester: Requester,
  namespace: string,
  readBody: () => Promise<string>,
): Promise<VirtualMachine> {
  await authorize(requester, { namespace, name: "" }, EXPAND_VM_SPEC_CHECK);
  const text = (await readBody()).trim();
  if (text === "") throw new ActionRefusal(400, "empty request body: send the VirtualMachine to expand as JSON");
  const parsed = parseVirtualMachine(parseRequestJson(text));
  if (!parsed.ok) throw new ActionRefusal(400, `Object is not a valid VirtualMachine: ${summarize(parsed.causes)}`);
  const vm = parsed.value;
  if (vm.metadata.namespace !== undefined && vm.metadata.namespace !== "" && vm.metadata.namespace !== namespace) {
    throw new ActionRefusal(
      400,
      `VM namespace must be empty or ${namespace}: metadata.namespace is ${vm.metadata.namespace}`,
    );
  }
  return expand(own, { ...vm, metadata: { ...vm.metadata, namespace } }, 400);
}
