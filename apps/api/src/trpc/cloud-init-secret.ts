import { type KubeClient, type KubeObject, resources } from "@kubevirt-ts/kube";
import { API_VERSION, Kind, type VirtualMachine, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { TRPCError } from "@trpc/server";
import { describeCheck, mayI } from "../access.ts";
import { CausesError } from "./init.ts";

// A VM created with cloud-init user data that must not sit in its spec (a
// password, an SSH key): `view` users may read every VM's spec, but not
// Secrets. The data goes into a Secret of the VM's namespace, created as the
// user and owned by the VM so that it goes when the VM goes; the VM names it
// in its cloudInitNoCloud volume's secretRef, and only the VM's launcher pod
// reads it, through a Secret volume.

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const CREATE_SECRETS = { verb: "create", group: "", resource: "secrets" } as const;

/** The Secret the VM's cloud-init volume names (secretRef), which the user data goes into. */
function secretNameOf(vm: VirtualMachine): string {
  const volumes = vm.spec.template.spec.volumes ?? [];
  const refs = volumes.flatMap((v) => (v.cloudInitNoCloud?.secretRef ? [v.cloudInitNoCloud.secretRef.name] : []));
  if (refs.length !== 1 || refs[0] === undefined) {
    const message =
      "cloud-init user data was given to keep in a Secret, " +
      `but ${refs.length === 0 ? "no" : "more than one"} cloudInitNoCloud volume names one in ` +
      "secretRef; add exactly one volume with cloudInitNoCloud.secretRef";
    throw new CausesError(message, [{ field: "spec.template.spec.volumes", message, reason: "FieldValueInvalid" }]);
  }
  return refs[0];
}

/** Creates the VM and, owned by it, the Secret holding its cloud-init user data; both as the user. */
export async function createVmWithCloudInitSecret(
  client: KubeClient,
  vm: VirtualMachine,
  userData: string,
): Promise<VirtualMachine> {
  const namespace = vm.metadata.namespace ?? "";
  const secretName = secretNameOf(vm);
  if (!(await mayI(client, namespace, CREATE_SECRETS, secretName))) {
    throw new TRPCError({
      code: "FORBIDDEN",
      message:
        `You may not create Secrets in ${namespace}: it takes ${describeCheck(CREATE_SECRETS)}. The ` +
        "password or SSH key is kept in a Secret of the VM, out of sight of those who may only view VMs; " +
        `ask for the edit role in ${namespace}, or create the VM without them.`,
    });
  }
  const created = await client.create<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vm);
  const owner = {
    apiVersion: API_VERSION,
    kind: Kind.VirtualMachine,
    name: created.metadata.name ?? "",
    uid: created.metadata.uid ?? "",
  };
  try {
    await client.create<KubeObject>(resources.secrets, namespace, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secretName, namespace, ownerReferences: [owner], labels: { "kubevirt.io/vm": owner.name } },
      type: "Opaque",
      stringData: { userdata: userData },
    } as KubeObject);
  } catch (error) {
    // Without its Secret the VM could never boot: take it back, then say why.
    try {
      await client.delete(kubevirtResources.virtualMachines, namespace, owner.name, { uid: owner.uid });
    } catch (rollback) {
      throw new TRPCError({
        code: "INTERNAL_SERVER_ERROR",
        message:
          `The VM ${owner.name} was created but its cloud-init Secret ${secretName} was not ` +
          `(${messageOf(error)}), and deleting the VM again failed (${messageOf(rollback)}); delete the ` +
          "VM: it cannot boot without the Secret.",
        cause: error,
      });
    }
    throw error;
  }
  return created;
}
