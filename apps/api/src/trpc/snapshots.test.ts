import type {
  VirtualMachineRestore,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { contentSize, newRestore, newSnapshot, restoreView, snapshotView } from "./snapshots.ts";

const GiB = 1024 ** 3;
const content = (...storages: (string | undefined)[]): VirtualMachineSnapshotContent => ({
  apiVersion: "snapshot.kubevirt.io/v1beta1",
  kind: "VirtualMachineSnapshotContent",
  metadata: { name: "vmsnapshot-content-1", namespace: "ns" },
  spec: {
    source: {},
    volumeBackups: storages.map((storage, i) => ({
      volumeName: `disk-${String(i)}`,
      persistentVolumeClaim: {
        metadata: { name: `claim-${String(i)}` },
        spec: storage === undefined ? {} : { resources: { requests: { storage } } },
      },
      volumeSnapshotName: `vmsnapshot-1-volume-disk-${String(i)}`,
    })),
  },
});

describe("a snapshot's size: what restoring its content makes", () => {
  it.each([
    ["the sum of its claims' requests", content("1Gi", "512Mi"), 1.5 * GiB],
    ["unknown when a claim names no size", content("1Gi", undefined), undefined],
    ["unknown without copies", content(), undefined],
    ["unknown without a content", undefined, undefined],
  ])("%s", (_, theContent, bytes) => {
    expect(contentSize(theContent)).toBe(bytes);
  });
});

describe("a snapshot and a restore as the Snapshots tab lists them", () => {
  const snapshot: VirtualMachineSnapshot = {
    ...newSnapshot("ns", "web-20260101-120000", "web"),
    metadata: { name: "web-20260101-120000", namespace: "ns", creationTimestamp: "2026-01-01T12:00:00Z" },
    status: {
      phase: "Succeeded",
      readyToUse: true,
      creationTime: "2026-01-01T12:00:01Z",
      indications: ["Online", "GuestAgent"],
      snapshotVolumes: { includedVolumes: ["root"], excludedVolumes: ["cloudinit"] },
      virtualMachineSnapshotContentName: "vmsnapshot-content-1",
    },
  };

  it("names a VM of the snapshot's namespace as KubeVirt's source reference", () => {
    expect(newSnapshot("ns", "snap", "web").spec.source).toEqual({
      apiGroup: "kubevirt.io",
      kind: "VirtualMachine",
      name: "web",
    });
  });

  it("shows what the snapshot holds, its size, and whether it can be restored now", () => {
    const restorable = { available: false as const, by: "state" as const, reason: "stop the VM first" };
    expect(snapshotView(snapshot, content("1Gi"), restorable)).toEqual({
      name: "web-20260101-120000",
      created: "2026-01-01T12:00:00Z",
      taken: "2026-01-01T12:00:01Z",
      phase: "Succeeded",
      readyToUse: true,
      indications: ["Online", "GuestAgent"],
      included: ["root"],
      excluded: ["cloudinit"],
      sizeBytes: GiB,
      error: undefined,
      restorable,
    });
    const deleting = { ...snapshot, metadata: { ...snapshot.metadata, deletionTimestamp: "2026-01-01T13:00:00Z" } };
    expect(snapshotView(deleting, undefined, { available: true }).phase).toBe("Deleting");
    expect(snapshotView({ ...snapshot, status: undefined }, undefined, { available: true })).toMatchObject({
      phase: "Pending",
      readyToUse: false,
      indications: [],
      sizeBytes: undefined,
    });
  });

  it("names a restore after its target, leaving the API server to make it unique within 63 characters", () => {
    const restore = newRestore("ns", "snap", "a".repeat(63));
    expect(restore.metadata.generateName).toHaveLength(58);
    expect(restore.spec).toEqual({
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "a".repeat(63) },
      virtualMachineSnapshotName: "snap",
    });
  });

  it("says how far a restore got, and why it failed", () => {
    const restore = (status: VirtualMachineRestore["status"]): VirtualMachineRestore => ({
      ...newRestore("ns", "snap", "web-copy"),
      metadata: { name: "web-copy-restore-x1", creationTimestamp: "2026-01-01T12:05:00Z" },
      status,
    });
    expect(restoreView(restore({ complete: true, restoreTime: "2026-01-01T12:06:00Z" }))).toEqual({
      name: "web-copy-restore-x1",
      created: "2026-01-01T12:05:00Z",
      snapshot: "snap",
      target: "web-copy",
      complete: true,
      restoreTime: "2026-01-01T12:06:00Z",
      failed: false,
      message: undefined,
      deletedDataVolumes: [],
    });
    const failed = restoreView(
      restore({
        complete: false,
        conditions: [
          { type: "Progressing", status: "False" },
          { type: "Failure", status: "True", message: "the snapshot's copy of root is gone" },
        ],
      }),
    );
    expect(failed).toMatchObject({ complete: false, failed: true, message: "the snapshot's copy of root is gone" });
  });
});
