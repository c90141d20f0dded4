import type { PersistentVolumeClaim } from "@kubevirt-ts/kube";
import { API_VERSION, Kind, type VirtualMachineInstance, controllerRef } from "@kubevirt-ts/kubevirt-api";
import { BACKEND_STORAGE_SIZE, type ClaimObject, backendStorageClaimName, claimVolumes } from "@kubevirt-ts/vm-rules";

/**
 * The StorageClass of a VMI's backend-storage claim, by KubeVirt's rule: the one the cluster names for VM state (the
 * chart's vmStateStorageClass, KubeVirt's vmStateStorageClass), else that of the claim the VMI boots from (the first
 * disk by boot order on a claim), else none: the cluster's default. The state is kept as files, so a Block-mode boot
 * claim's class (whose volumes may all be Block, as the local cluster's local-block) is passed over for the default.
 */
export function backendStorageClass(
  vmi: VirtualMachineInstance,
  claims: ReadonlyMap<string, ClaimObject>,
  configured: string | undefined,
): string | undefined {
  if (configured) return configured;
  const disks = [...(vmi.spec.domain.devices.disks ?? [])].map((disk, index) => ({ disk, index }));
  disks.sort((a, b) => (a.disk.bootOrder ?? Infinity) - (b.disk.bootOrder ?? Infinity) || a.index - b.index);
  const claimOf = new Map(claimVolumes(vmi.spec).map((c) => [c.volume, c.claimName]));
  for (const { disk } of disks) {
    const claimName = disk.disk ? claimOf.get(disk.name) : undefined;
    if (claimName === undefined) continue;
    const claim = claims.get(claimName);
    return claim?.spec?.volumeMode === "Block" ? undefined : claim?.spec?.storageClassName;
  }
  return undefined;
}

/**
 * The claim itself: persistent-state-for-<VMI>, 10Mi, in Filesystem mode, owned by the VMI's own owner (its VM), so
 * that it outlives the VMI and goes with the VM; a VMI that no VM owns owns it itself, as KubeVirt does. ReadWriteOnce,
 * where KubeVirt asks for ReadWriteMany when the class offers it, for live migration, which kubevirt-ts does not do
 * yet.
 */
export function backendStorageClaim(
  vmi: VirtualMachineInstance,
  storageClassName: string | undefined,
): PersistentVolumeClaim {
  const owner = vmi.metadata.ownerReferences?.find((ref) => ref.controller === true);
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: backendStorageClaimName(vmi),
      namespace: vmi.metadata.namespace,
      ownerReferences: [
        owner
          ? { ...owner }
          : controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachineInstance, metadata: vmi.metadata }),
      ],
    },
    spec: {
      accessModes: ["ReadWriteOnce"],
      volumeMode: "Filesystem",
      resources: { requests: { storage: BACKEND_STORAGE_SIZE } },
      ...(storageClassName !== undefined ? { storageClassName } : {}),
    },
  };
}
