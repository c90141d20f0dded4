import { type KubeClient, isAlreadyExists } from "@kubevirt-ts/kube";
import {
  type Expanded,
  type InstancetypeStatusRef,
  type Lookup,
  type VirtualMachine,
  Causes,
  controllerRevisionFor,
  controllerRevisions,
  expandVmiSpec,
  expansionSources,
  findInstancetypeAndPreference,
  statusRef,
  summarize,
} from "@kubevirt-ts/kubevirt-api";
import { isDeepStrictEqual } from "node:util";

// A VM's instancetype and preference, as the VM controller keeps them: it
// captures each in a ControllerRevision owned by the VM the first time it
// sees it, records which in status.instancetypeRef / preferenceRef (as
// KubeVirt v1.5 and later do; the spec is left as the user wrote it), and
// expands the VMI from the captured copies, so that editing or deleting an
// instancetype later does not change a VM that uses it.

export interface Sizing {
  /** The template as the VMI gets it, or undefined when it cannot be expanded (see problem). */
  expanded: Expanded | undefined;
  instancetypeRef: InstancetypeStatusRef | undefined;
  preferenceRef: InstancetypeStatusRef | undefined;
  /** Why the VM cannot start now: KubeVirt's Failure condition reason and message. */
  problem?: { reason: string; message: string };
}

interface Captured {
  data?: { spec?: unknown };
}

async function capture(
  client: KubeClient,
  vm: VirtualMachine,
  object: Parameters<typeof controllerRevisionFor>[1],
): Promise<string | undefined> {
  const revision = controllerRevisionFor(vm, object) as { metadata: { name: string } };
  try {
    await client.create(controllerRevisions, vm.metadata.namespace, revision);
    return undefined;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    const existing = await client.get<Captured & { metadata: object }>(
      controllerRevisions,
      vm.metadata.namespace,
      revision.metadata.name,
    );
    if (isDeepStrictEqual(existing.data?.spec, object.spec)) return undefined;
    return (
      `found existing ControllerRevision ${revision.metadata.name} with unexpected ` +
      "data: delete it to capture the object again"
    );
  }
}

/**
 * The controller's reads of instancetypes, preferences and ControllerRevisions. A revision never changes once made, so
 * each is read once and kept until its VM goes (`forget`), instead of once per sync of the VM.
 */
export class InstancetypeLookup {
  private readonly revisions = new Map<string, unknown>();
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  readonly lookup: Lookup = async (resource, namespace, name) => {
    if (resource !== controllerRevisions) return this.client.find(resource, namespace, name);
    const key = `${namespace ?? ""}/${name}`;
    if (this.revisions.has(key)) return this.revisions.get(key);
    const found = await this.client.find(resource, namespace, name);
    if (found !== undefined) this.revisions.set(key, found);
    return found;
  };

  /** Drops the revisions of a VM that is gone, by its key (namespace/name): their names start with the VM's. */
  forget(vmKey: string): void {
    const prefix = `${vmKey}-`;
    for (const key of this.revisions.keys()) if (key.startsWith(prefix)) this.revisions.delete(key);
  }
}

export async function sizeVm(client: KubeClient, lookups: InstancetypeLookup, vm: VirtualMachine): Promise<Sizing> {
  const template = { spec: vm.spec.template.spec, annotations: vm.spec.template.metadata?.annotations };
  if (!vm.spec.instancetype && !vm.spec.preference)
    return { expanded: template, instancetypeRef: undefined, preferenceRef: undefined };
  const found = await findInstancetypeAndPreference(vm, lookups.lookup);
  const name = vm.metadata.name ?? "";
  const refs = {
    instancetypeRef: statusRef(found.instancetype, name),
    preferenceRef: statusRef(found.preference, name),
  };
  const [problem] = found.problems;
  if (problem) return { expanded: undefined, ...refs, problem: { reason: problem.reason, message: problem.message } };
  for (const one of [found.instancetype, found.preference]) {
    if (!one || !("object" in one.revision)) continue;
    const refused = await capture(client, vm, one.revision.object);
    if (refused)
      return {
        expanded: undefined,
        instancetypeRef: undefined,
        preferenceRef: undefined,
        problem: { reason: "FailedCreateControllerRevision", message: refused },
      };
  }
  const causes = new Causes();
  const expanded = expandVmiSpec(template, expansionSources(found), "spec.template.spec", causes);
  if (causes.list.length > 0)
    return {
      expanded: undefined,
      ...refs,
      problem: { reason: "FailedCreate", message: `VMI conflicts with instancetype spec: ${summarize(causes.list)}` },
    };
  return { expanded, ...refs };
}
