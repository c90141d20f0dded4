import type { VirtualMachineSnapshotContent } from "./schema/snapshot.ts";

// Where a snapshot's parts are, by name: the snapshot controller makes them by these names and the restore
// controller finds them by the same (docs/adr/0027). The names are KubeVirt's, so a content or a copy made by either
// is found the same way.

/** The VirtualMachineSnapshotContent of a snapshot, by the snapshot's uid (KubeVirt's name). */
export const snapshotContentName = (snapshotUid: string) => `vmsnapshot-content-${snapshotUid}`;

/** The copy of one volume: the name KubeVirt gives its VolumeSnapshot, and kubevirt-ts its copy claim. */
export const volumeCopyName = (snapshotUid: string, volumeName: string) =>
  `vmsnapshot-${snapshotUid}-volume-${volumeName}`;

/**
 * On a content whose copies are claims kubevirt-ts filled (storage without CSI snapshots): their kind. A content
 * without it holds VolumeSnapshots, as KubeVirt's.
 */
export const VOLUME_COPY_KIND_ANNOTATION = "snapshot.kubevirt-ts.io/volume-copy-kind";

export type VolumeCopyKind = "VolumeSnapshot" | "PersistentVolumeClaim";

/** A volume's copy, in the content's namespace. */
export interface VolumeCopy {
  kind: VolumeCopyKind;
  namespace: string;
  name: string;
}

/** Where the copy of `volumeName` is, or undefined when the content holds none for it. */
export function volumeCopyOf(content: VirtualMachineSnapshotContent, volumeName: string): VolumeCopy | undefined {
  const backup = content.spec.volumeBackups?.find((b) => b.volumeName === volumeName);
  if (!backup?.volumeSnapshotName) return undefined;
  const kind =
    content.metadata.annotations?.[VOLUME_COPY_KIND_ANNOTATION] === "PersistentVolumeClaim"
      ? "PersistentVolumeClaim"
      : "VolumeSnapshot";
  return { kind, namespace: content.metadata.namespace ?? "", name: backup.volumeSnapshotName };
}
