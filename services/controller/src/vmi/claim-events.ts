import {
  type EventHandler,
  type Informer,
  type KubeObject,
  type PersistentVolumeClaim,
  type Pod,
  type WorkQueue,
  keyOf,
} from "@kubevirt-ts/kube";
import {
  type ClaimObject,
  type DataVolumesState,
  claimVolumes,
  dataVolumeNames,
  dataVolumesState,
} from "@kubevirt-ts/vm-rules";
import type { DataVolume, VirtualMachine, VirtualMachineInstance, VmiSpec } from "@kubevirt-ts/kubevirt-api";

// What a change to a PersistentVolumeClaim or a DataVolume means for the
// controllers: the VMIs and VMs whose volumes name it look again (a VMI that
// waited for it makes its pod, and reports its size in its volume status; a
// VM says whether it still waits for the claim to bind or the disk to fill).

/** The index, on the VMI and VM informers, of the claims their volumes name: namespace/claim. */
export const BY_CLAIM = "claim";

const claimKeys = (namespace: string | undefined, spec: Pick<VmiSpec, "volumes">) =>
  claimVolumes(spec).map((c) => `${namespace ?? ""}/${c.claimName}`);

export const vmisByClaim = (vmi: VirtualMachineInstance): string[] => claimKeys(vmi.metadata.namespace, vmi.spec);
export const vmsByClaim = (vm: VirtualMachine): string[] => claimKeys(vm.metadata.namespace, vm.spec.template.spec);
/** The claims a pod mounts (launcher and importer pods: what uses a claim). */
export const podsByClaim = (pod: Pod): string[] =>
  (pod.spec?.volumes ?? []).flatMap((v) =>
    v.persistentVolumeClaim ? [`${pod.metadata.namespace ?? ""}/${v.persistentVolumeClaim.claimName}`] : [],
  );

/**
 * Enqueues the objects of an informer indexed BY_CLAIM whose volumes name the claim; or the DataVolume, whose claim has
 * its name (a dataVolume volume is on that claim).
 */
export function claimEvents<T extends KubeObject, C extends KubeObject = PersistentVolumeClaim>(
  queue: WorkQueue,
  naming: Informer<T>,
): EventHandler<C> {
  const enqueue = (claim: C) => {
    for (const object of naming.byIndex(BY_CLAIM, keyOf(claim))) queue.add(keyOf(object));
  };
  return {
    add: enqueue,
    update: (_, claim) => {
      enqueue(claim);
    },
    delete: enqueue,
  };
}

/** The claims a VMI's volumes name that the cache holds, by name. */
export function claimsOf(
  vmi: Pick<VirtualMachineInstance, "metadata" | "spec">,
  claims: Informer<PersistentVolumeClaim>,
): Map<string, ClaimObject> {
  const found = new Map<string, ClaimObject>();
  for (const { claimName } of claimVolumes(vmi.spec)) {
    const claim = claims.get(`${vmi.metadata.namespace ?? ""}/${claimName}`);
    if (claim) found.set(claimName, claim);
  }
  return found;
}

/**
 * Whether the DataVolumes a VMI spec (a VMI's, or a VM's template) names in the namespace have filled their claims, as
 * the cache holds them; undefined when it names none.
 */
export function dataVolumesOf(
  namespace: string | undefined,
  spec: Pick<VmiSpec, "volumes">,
  dataVolumes: Informer<DataVolume> | undefined,
): DataVolumesState | undefined {
  const found = new Map<string, DataVolume>();
  for (const name of dataVolumeNames(spec)) {
    const dv = dataVolumes?.get(`${namespace ?? ""}/${name}`);
    if (dv) found.set(name, dv);
  }
  return dataVolumesState(spec, found);
}
