import { describe, expect, it } from "vitest";
import { completionTimeoutMs, disksToCopy, parseJobStats } from "./job-stats.ts";

describe("libvirt's job stats", () => {
  it("are read from virsh's raw lines, the job's type from its header", () => {
    const text = ["Job type:         Unbounded", "", "operation=2", "time_elapsed=1520", "data_total=138412032", "data_processed=52428800", "data_remaining=85983232",
      "memory_bps=33554432", "memory_dirty_rate=12", "memory_iteration=1", "downtime=300", "compression_cache=0"].join("\n");
    expect(parseJobStats(text)).toEqual({
      type: "Unbounded",
      progress: { elapsedMs: 1520, dataTotal: 138412032, dataProcessed: 52428800, dataRemaining: 85983232, memoryBps: 33554432, dirtyRate: 12, iteration: 1, downtimeMs: 300 },
    });
  });

  it("give no progress without a job", () => {
    expect(parseJobStats("Job type:         None\n\n")).toEqual({ type: "None", progress: undefined });
  });
});

describe("the disks a migration copies", () => {
  const xml = `<domain><devices>
    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='/var/run/kubevirt-ts/launcher/disks/containerdisk.qcow2'/><target dev='vda' bus='virtio'/></disk>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='/var/run/kubevirt-ts/launcher/disks/cloudinit.iso'/><target dev='vdb' bus='virtio'/><readonly/></disk>
    <disk type='file' device='cdrom'><source file='/var/run/kubevirt-ts/launcher/disks/config.iso'/><target dev='sda' bus='sata'/></disk>
    <disk type='file' device='disk'><source file='/var/run/kubevirt-ts/claims/data/disk.img'/><target dev='vdc' bus='virtio'/></disk>
    <disk type='block' device='disk'><source dev='/var/run/kubevirt-ts/devices/block'/><target dev='vdd' bus='virtio'/></disk>
  </devices></domain>`;

  it("are the writable disks in the launcher's own folder, which the target made afresh", () => {
    expect(disksToCopy(xml, ["/var/run/kubevirt-ts/launcher/disks"])).toEqual(["vda"]);
  });

  it("include claims' disks when they are not shared", () => {
    expect(disksToCopy(xml, ["/var/run/kubevirt-ts/launcher/disks/", "/var/run/kubevirt-ts/claims", "/var/run/kubevirt-ts/devices"])).toEqual(["vda", "vdc", "vdd"]);
  });

  it("never take a folder for another that starts with its name", () => {
    expect(disksToCopy(xml, ["/var/run/kubevirt-ts/launcher/disk"])).toEqual([]);
  });
});

describe("a migration's completion time", () => {
  it("is the seconds per GiB times the GiB it moves, at least one", () => {
    expect(completionTimeoutMs(undefined, 150)).toBe(150_000);
    expect(completionTimeoutMs(128 * 1024 ** 2, 150)).toBe(150_000);
    expect(completionTimeoutMs(2.5 * 1024 ** 3, 10)).toBe(30_000);
  });

  it("has no limit at 0 seconds per GiB, as KubeVirt's", () => {
    expect(completionTimeoutMs(64 * 1024 ** 3, 0)).toBe(Infinity);
  });
});
