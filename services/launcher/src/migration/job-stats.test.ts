import { describe, expect, it } from "vitest";
import { type MonitorInput, completionTimeoutMs, disksToCopy, monitorStep, parseJobStats } from "./job-stats.ts";

describe("libvirt's job stats", () => {
  it("are read from virsh's raw lines, the job's type from its header", () => {
    const text = [
      "Job type:         Unbounded",
      "",
      "operation=2",
      "time_elapsed=1520",
      "data_total=138412032",
      "data_processed=52428800",
      "data_remaining=85983232",
      "memory_bps=33554432",
      "memory_dirty_rate=12",
      "memory_iteration=1",
      "downtime=300",
      "compression_cache=0",
    ].join("\n");
    expect(parseJobStats(text)).toEqual({
      type: "Unbounded",
      progress: {
        elapsedMs: 1520,
        dataTotal: 138412032,
        dataProcessed: 52428800,
        dataRemaining: 85983232,
        memoryBps: 33554432,
        dirtyRate: 12,
        iteration: 1,
        downtimeMs: 300,
      },
    });
  });

  it("give no progress without a job", () => {
    expect(parseJobStats("Job type:         None\n\n")).toEqual({ type: "None", progress: undefined });
  });
});

describe("the disks a migration copies", () => {
  const xml = `<domain><devices>
    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/>
      <source file='/var/run/kubevirt-ts/launcher/disks/containerdisk.qcow2'/>
      <target dev='vda' bus='virtio'/></disk>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/>
      <source file='/var/run/kubevirt-ts/launcher/disks/cloudinit.iso'/>
      <target dev='vdb' bus='virtio'/><readonly/></disk>
    <disk type='file' device='cdrom'>
      <source file='/var/run/kubevirt-ts/launcher/disks/config.iso'/>
      <target dev='sda' bus='sata'/></disk>
    <disk type='file' device='disk'>
      <source file='/var/run/kubevirt-ts/claims/data/disk.img'/>
      <target dev='vdc' bus='virtio'/></disk>
    <disk type='block' device='disk'>
      <source dev='/var/run/kubevirt-ts/devices/block'/>
      <target dev='vdd' bus='virtio'/></disk>
  </devices></domain>`;

  it("are the writable disks in the launcher's own folder, which the target made afresh", () => {
    expect(disksToCopy(xml, ["/var/run/kubevirt-ts/launcher/disks"])).toEqual(["vda"]);
  });

  it("include claims' disks when they are not shared", () => {
    expect(
      disksToCopy(xml, [
        "/var/run/kubevirt-ts/launcher/disks/",
        "/var/run/kubevirt-ts/claims",
        "/var/run/kubevirt-ts/devices",
      ]),
    ).toEqual(["vda", "vdc", "vdd"]);
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

describe("the migration monitor's look at the job, as KubeVirt's", () => {
  const MiB = 1024 ** 2;
  const options = { postCopy: false, completionTimeoutPerGiB: 150, progressTimeout: 150 };
  const look = (fields: Partial<MonitorInput> = {}) =>
    monitorStep({
      progress: { elapsedMs: 10_000, dataTotal: 128 * MiB, dataRemaining: 50 * MiB },
      mark: { atMs: 0, remaining: 60 * MiB },
      nowMs: 10_000,
      mode: "PreCopy",
      options,
      postCopyFailed: false,
      ...fields,
    });

  it("marks progress whenever the data left went down, and at the first look", () => {
    expect(look()).toEqual({ mark: { atMs: 10_000, remaining: 50 * MiB }, action: { kind: "none" } });
    expect(look({ mark: { atMs: 0, remaining: undefined } }).mark.atMs).toBe(10_000);
    // A pass over memory the guest dirtied again: more left than at the last look, no progress.
    expect(look({ mark: { atMs: 2_000, remaining: 40 * MiB } }).mark).toEqual({ atMs: 2_000, remaining: 50 * MiB });
  });

  it(
    "aborts a migration whose data left has not gone down for its progress timeout, " +
      "unless that is 0 or it is in post-copy",
    () => {
      const stuck = { mark: { atMs: 0, remaining: 50 * MiB }, nowMs: 151_000 };
      expect(look(stuck).action).toEqual({ kind: "abortStuck", stuckMs: 151_000 });
      expect(look({ ...stuck, nowMs: 150_000 }).action).toEqual({ kind: "none" });
      expect(look({ ...stuck, options: { ...options, progressTimeout: 0 } }).action).toEqual({ kind: "none" });
      expect(look({ ...stuck, mode: "PostCopy" }).action).toEqual({ kind: "none" });
    },
  );

  it(
    "past its completion time, switches to post-copy when allowed and it was " + "not refused, and aborts otherwise",
    () => {
      const late = { progress: { elapsedMs: 151_000, dataTotal: 128 * MiB, dataRemaining: 50 * MiB } };
      expect(look(late).action).toEqual({ kind: "abortLate", allowedMs: 150_000 });
      expect(look({ ...late, options: { ...options, postCopy: true } }).action).toEqual({
        kind: "postCopy",
        allowedMs: 150_000,
      });
      expect(look({ ...late, options: { ...options, postCopy: true }, postCopyFailed: true }).action).toEqual({
        kind: "abortLate",
        allowedMs: 150_000,
      });
      expect(look({ ...late, options: { ...options, completionTimeoutPerGiB: 0 } }).action).toEqual({ kind: "none" });
    },
  );
});
