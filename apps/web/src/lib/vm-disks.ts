import type { VirtualMachine, VirtualMachineInstance, Volume } from "@kubevirt-ts/kubevirt-api";
import { claimVolumes } from "@kubevirt-ts/vm-rules";

// A VM's disks as its page lists them: each disk of its template, where it
// comes from in words, whether it outlives the VM's runs, and what the
// running VMI reports of it (its device in the guest, its claim's size).

export interface DiskRow {
  name: string;
  /** disk, cdrom or lun, and its bus. */
  kind: string;
  source: string;
  /** The disk keeps what the guest writes across stops and starts. */
  persistent: boolean;
  /** The guest's device (vda, sdb, ...), while the VMI runs. */
  device: string | undefined;
  /** The claim holding it, for a disk on a claim. */
  claim: string | undefined;
  /** The claim's size as the cluster reports it. */
  size: string | undefined;
}

function sourceInWords(volume: Volume | undefined): { source: string; persistent: boolean } {
  if (!volume) return { source: "no volume of this name", persistent: false };
  if (volume.persistentVolumeClaim)
    return {
      source:
        `claim ${volume.persistentVolumeClaim.claimName}` +
        (volume.persistentVolumeClaim.readOnly ? " (read-only)" : ""),
      persistent: true,
    };
  if (volume.dataVolume) return { source: `DataVolume ${volume.dataVolume.name}`, persistent: true };
  if (volume.containerDisk)
    return { source: `image ${volume.containerDisk.image}, reset at each start`, persistent: false };
  if (volume.emptyDisk)
    return { source: `blank ${String(volume.emptyDisk.capacity)}, emptied at each start`, persistent: false };
  if (volume.cloudInitNoCloud || volume.cloudInitConfigDrive) return { source: "cloud-init data", persistent: false };
  if (volume.configMap) return { source: `ConfigMap ${volume.configMap.name}`, persistent: false };
  if (volume.secret) return { source: `Secret ${volume.secret.secretName}`, persistent: false };
  if (volume.serviceAccount)
    return { source: `ServiceAccount ${volume.serviceAccount.serviceAccountName}'s token`, persistent: false };
  if (volume.downwardAPI) return { source: "the pod's fields (downward API)", persistent: false };
  return { source: "other", persistent: false };
}

export function vmDisks(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): DiskRow[] {
  const spec = vm.spec.template.spec;
  const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
  // The claim of each volume on one: a persistentVolumeClaim's, or a DataVolume's (of its name).
  const claims = new Map(claimVolumes(spec).map((c) => [c.volume, c.claimName]));
  const reported = new Map((vmi?.status?.volumeStatus ?? []).map((s) => [s.name, s]));
  return (spec.domain.devices.disks ?? []).map((disk) => {
    const kind = disk.cdrom
      ? `CD-ROM (${disk.cdrom.bus ?? "sata"})`
      : disk.lun
        ? `LUN (${disk.lun.bus ?? "scsi"})`
        : `disk (${disk.disk?.bus ?? "sata"})`;
    const status = reported.get(disk.name);
    const claim = status?.persistentVolumeClaimInfo;
    return {
      name: disk.name,
      kind,
      ...sourceInWords(volumes.get(disk.name)),
      device: status?.target === "" ? undefined : status?.target,
      claim: claim?.claimName ?? claims.get(disk.name),
      size: claim?.capacity?.storage ?? claim?.requests?.storage,
    };
  });
}
