import type { VmiSpec, VolumeStatus } from "@kubevirt-ts/kubevirt-api";

// Volumes on PersistentVolumeClaims, as KubeVirt has them. The claim is
// always in the VMI's own namespace: a pod can mount no other. The
// controller mounts a Filesystem-mode claim's root in the launcher pod at
// CLAIM_DISKS_DIR/<volume>, where the guest's disk is the file disk.img
// (the launcher creates it sparse when it is absent); a Block-mode claim
// becomes the device at CLAIM_DEVICES_DIR/<volume>, passed to QEMU raw.
// What the launcher needs of the claim (its mode, size and access modes)
// travels in the VMI's status.volumeStatus, which the controller writes
// before the launcher starts, as KubeVirt's does.

/** Where the launcher pod mounts Filesystem-mode claims: <dir>/<volume>/disk.img. */
export const CLAIM_DISKS_DIR = "/var/run/kubevirt-ts/vmi-disks";
/** Where the launcher pod gets Block-mode claims as devices: <dir>/<volume>. */
export const CLAIM_DEVICES_DIR = "/dev/vmi-disks";
/** The disk image's name at a Filesystem-mode claim's root, as KubeVirt's. */
export const CLAIM_DISK_FILE = "disk.img";
/** KubeVirt's default share of a file system its disk image must leave free (CDI's filesystemOverhead). */
export const DEFAULT_FILESYSTEM_OVERHEAD = "0.055";

export const MIB = 1024 * 1024;
/** Disk images are sized in whole MiB, as KubeVirt and CDI size them. */
export const alignDownToMiB = (bytes: number): number => Math.floor(bytes / MIB) * MIB;
export const alignUpToMiB = (bytes: number): number => Math.ceil(bytes / MIB) * MIB;

/** A file-system overhead as a share; anything outside [0, 1] is none KubeVirt would take either, so the default is. */
export function filesystemOverhead(given: string | number | undefined): number {
  const share = Number(given ?? DEFAULT_FILESYSTEM_OVERHEAD);
  return Number.isFinite(share) && share >= 0 && share <= 1 ? share : Number(DEFAULT_FILESYSTEM_OVERHEAD);
}

/**
 * The largest disk image a claim of `claimBytes` holds while leaving its file system's overhead free, in whole MiB: the
 * rule by which the launcher grows a disk.img and CDI (and kubevirt-ts's importer) sizes one on a claim of a given
 * size.
 */
export function diskBytesOnClaim(claimBytes: number, overhead?: string | number): number {
  return alignDownToMiB((1 - filesystemOverhead(overhead)) * claimBytes);
}

export interface ClaimVolume {
  /** The VMI volume. */
  volume: string;
  /** The claim, in the VMI's namespace. */
  claimName: string;
  /** The volume asks for the claim read-only (an ephemeral volume always does). */
  readOnly: boolean;
  /** An ephemeral volume: the guest writes to a copy-on-write overlay over the claim's disk, never to the claim. */
  ephemeral: boolean;
  /** The pod volume's name: a DNS label, whatever the VMI volume is called. */
  podVolume: string;
}

/**
 * The VMI's volumes backed by a claim: its persistentVolumeClaim volumes, its dataVolume volumes (on the claim of the
 * DataVolume's name), and its ephemeral volumes (read-only, under an overlay).
 */
export function claimVolumes(spec: Pick<VmiSpec, "volumes">): ClaimVolume[] {
  return (spec.volumes ?? []).flatMap((volume, i): ClaimVolume[] => {
    const podVolume = `claim-${String(i)}`;
    if (volume.persistentVolumeClaim)
      return [
        {
          volume: volume.name,
          claimName: volume.persistentVolumeClaim.claimName,
          readOnly: volume.persistentVolumeClaim.readOnly === true,
          ephemeral: false,
          podVolume,
        },
      ];
    if (volume.dataVolume)
      return [{ volume: volume.name, claimName: volume.dataVolume.name, readOnly: false, ephemeral: false, podVolume }];
    if (volume.ephemeral)
      return [
        {
          volume: volume.name,
          claimName: volume.ephemeral.persistentVolumeClaim.claimName,
          readOnly: true,
          ephemeral: true,
          podVolume,
        },
      ];
    return [];
  });
}

/** The disk image of a Filesystem-mode claim's volume, in the launcher pod. */
export const claimDiskPath = (volume: string): string => `${CLAIM_DISKS_DIR}/${volume}/${CLAIM_DISK_FILE}`;
/** The device of a Block-mode claim's volume, in the launcher pod. */
export const claimDevicePath = (volume: string): string => `${CLAIM_DEVICES_DIR}/${volume}`;

/** The parts of a PersistentVolumeClaim these rules read. */
export interface ClaimObject {
  metadata: { name?: string; annotations?: Record<string, string> };
  spec?: {
    accessModes?: string[];
    volumeMode?: string;
    storageClassName?: string;
    resources?: { requests?: Record<string, string | number> };
  };
  status?: { phase?: string; capacity?: Record<string, string | number> };
}

const strings = (list: Record<string, string | number> | undefined): Record<string, string> | undefined =>
  list === undefined ? undefined : Object.fromEntries(Object.entries(list).map(([k, v]) => [k, String(v)]));

/** Whether the claim's provisioner wrote its space out in full (CDI's preallocation annotations). */
const preallocated = (claim: ClaimObject): boolean =>
  Object.entries(claim.metadata.annotations ?? {}).some(
    ([k, v]) => (k.endsWith("/storage.preallocation") || k.endsWith("/storage.thick-provisioned")) && v === "true",
  );

/**
 * status.volumeStatus for the VMI's volumes, sorted by name as KubeVirt's: each volume, and for a claim that exists
 * what the launcher needs of it (claim info). `claims` holds the claims found, by claim name. `targets` are the
 * guest's device names the handler reported (kept as they are); a volume without one has an empty target.
 */
export function volumeStatuses(
  spec: Pick<VmiSpec, "volumes">,
  claims: ReadonlyMap<string, ClaimObject>,
  previous: readonly VolumeStatus[] = [],
): VolumeStatus[] {
  const byVolume = new Map(claimVolumes(spec).map((c) => [c.volume, c]));
  const targets = new Map(previous.map((s) => [s.name, s.target]));
  return (spec.volumes ?? [])
    .map((volume): VolumeStatus => {
      const claimVolume = byVolume.get(volume.name);
      const claim = claimVolume ? claims.get(claimVolume.claimName) : undefined;
      const base: VolumeStatus = { name: volume.name, target: targets.get(volume.name) ?? "" };
      if (!claimVolume || !claim) return base;
      const mode = claim.spec?.volumeMode ?? "Filesystem";
      return {
        ...base,
        persistentVolumeClaimInfo: {
          claimName: claimVolume.claimName,
          ...(claim.spec?.accessModes ? { accessModes: [...claim.spec.accessModes] } : {}),
          volumeMode: mode,
          ...(claim.status?.capacity ? { capacity: strings(claim.status.capacity) } : {}),
          ...(claim.spec?.resources?.requests ? { requests: strings(claim.spec.resources.requests) } : {}),
          preallocated: preallocated(claim),
          filesystemOverhead: mode === "Block" ? "0" : DEFAULT_FILESYSTEM_OVERHEAD,
        },
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The claims a VMI needs that are not there, by name, in its namespace. */
export function missingClaims(spec: Pick<VmiSpec, "volumes">, claims: ReadonlyMap<string, ClaimObject>): string[] {
  return [...new Set(claimVolumes(spec).map((c) => c.claimName))].filter((name) => !claims.has(name));
}

/**
 * Why the VMI's launcher pod cannot be made yet for its claims, as its Synchronized condition's reason and message, or
 * undefined when every claim is there: a claim that does not exist (KubeVirt's FailedPvcNotFound; the VMI starts
 * once it is made).
 */
export function claimsProblem(
  vmi: { metadata: { namespace?: string }; spec: Pick<VmiSpec, "volumes"> },
  claims: ReadonlyMap<string, ClaimObject>,
): { reason: string; message: string } | undefined {
  const namespace = vmi.metadata.namespace ?? "";
  const missing = missingClaims(vmi.spec, claims);
  if (missing.length > 0) {
    const names = missing.map((name) => `${namespace}/${name}`).join(", ");
    return {
      reason: "FailedPvcNotFound",
      message:
        `PVC ${names} does not exist, waiting for it to appear; create the PersistentVolumeClaim in ` +
        `namespace ${namespace}, or change the volume's claimName`,
    };
  }
  return undefined;
}
