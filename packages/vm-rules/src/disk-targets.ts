import type { VmiSpec } from "@kubevirt-ts/kubevirt-api";

// The guest's device name of each disk, as libvirt's target: virtio disks
// are vda, vdb, ...; sata and scsi disks sda, sdb, ..., in the order of the
// VMI's disks. The launcher builds the domain with these names, and the
// handler reports them as each volume's target (status.volumeStatus).

/** Disk target suffixes: a, b, … z, aa, ab, … */
export function diskSuffix(index: number): string {
  let n = index;
  let suffix = "";
  do {
    suffix = String.fromCharCode(97 + (n % 26)) + suffix;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return suffix;
}

/** The bus a disk is on: its target type's bus, or KubeVirt's default for it. */
export function diskBus(disk: NonNullable<VmiSpec["domain"]["devices"]["disks"]>[number]): string {
  if (disk.cdrom) return disk.cdrom.bus ?? "sata";
  if (disk.lun) return disk.lun.bus ?? "scsi";
  return disk.disk?.bus ?? "sata";
}

/** Each disk's target device name, by disk (and volume) name. */
export function diskTargets(spec: Pick<VmiSpec, "domain">): Map<string, string> {
  const counters = { vd: 0, sd: 0 };
  return new Map(
    (spec.domain.devices.disks ?? []).map((disk) => {
      const prefix = diskBus(disk) === "virtio" ? "vd" : "sd";
      return [disk.name, `${prefix}${diskSuffix(counters[prefix]++)}`];
    }),
  );
}
