import { type EventHandler, type Informer, type PersistentVolumeClaim, type WorkQueue, keyOf } from "@kubevirt-ts/kube";
import { type ClaimObject, type VirtualMachineInstance, claimVolumes } from "@kubevirt-ts/kubevirt-api";

// What a change to a PersistentVolumeClaim means for the VMI controller: the
// VMIs whose volumes name it look again (one that waited for it to appear
// makes its pod; the others report its size in their volume status).

export const VMIS_BY_CLAIM = "claim";

/** The VMI informer's index by the claims its volumes name: namespace/claim. */
export function vmisByClaim(vmi: VirtualMachineInstance): string[] {
  return claimVolumes(vmi.spec).map((c) => `${vmi.metadata.namespace ?? ""}/${c.claimName}`);
}

export function claimEvents(queue: WorkQueue, vmis: Informer<VirtualMachineInstance>): EventHandler<PersistentVolumeClaim> {
  const enqueue = (claim: PersistentVolumeClaim) => {
    for (const vmi of vmis.byIndex(VMIS_BY_CLAIM, keyOf(claim))) queue.add(keyOf(vmi));
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
export function claimsOf(vmi: Pick<VirtualMachineInstance, "metadata" | "spec">, claims: Informer<PersistentVolumeClaim>): Map<string, ClaimObject> {
  const found = new Map<string, ClaimObject>();
  for (const { claimName } of claimVolumes(vmi.spec)) {
    const claim = claims.get(`${vmi.metadata.namespace ?? ""}/${claimName}`);
    if (claim) found.set(claimName, claim);
  }
  return found;
}
