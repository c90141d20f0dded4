import { describe, expect, it } from "vitest";
import { virtualMachineSnapshotSpec, type VirtualMachineSnapshotContent } from "./schema/snapshot.ts";
import { VOLUME_COPY_KIND_ANNOTATION, snapshotContentName, volumeCopyName, volumeCopyOf } from "./snapshot.ts";

const content = (annotations?: Record<string, string>): VirtualMachineSnapshotContent => ({
  apiVersion: "snapshot.kubevirt.io/v1beta1",
  kind: "VirtualMachineSnapshotContent",
  metadata: { name: snapshotContentName("u1"), namespace: "ns", ...(annotations ? { annotations } : {}) },
  spec: {
    source: {},
    volumeBackups: [
      { volumeName: "root", persistentVolumeClaim: {}, volumeSnapshotName: volumeCopyName("u1", "root") },
      { volumeName: "data", persistentVolumeClaim: {} },
    ],
  },
});

describe("a snapshot's names", () => {
  it("are KubeVirt's", () => {
    expect(snapshotContentName("u1")).toBe("vmsnapshot-content-u1");
    expect(volumeCopyName("u1", "root")).toBe("vmsnapshot-u1-volume-root");
  });

  it("find a volume's copy claim where the content says its copies are claims", () => {
    expect(volumeCopyOf(content({ [VOLUME_COPY_KIND_ANNOTATION]: "PersistentVolumeClaim" }), "root")).toEqual({
      kind: "PersistentVolumeClaim",
      namespace: "ns",
      name: "vmsnapshot-u1-volume-root",
    });
  });

  it("find a VolumeSnapshot in a content as KubeVirt writes it, and nothing for a volume without a copy", () => {
    expect(volumeCopyOf(content(), "root")?.kind).toBe("VolumeSnapshot");
    expect(volumeCopyOf(content(), "data")).toBeUndefined();
    expect(volumeCopyOf(content(), "nothing")).toBeUndefined();
  });
});

describe("a snapshot's spec", () => {
  const source = { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" };

  it("takes KubeVirt's fields", () => {
    const spec = { source, deletionPolicy: "Retain", failureDeadline: "1m30s", snapshotMode: "Direct" };
    expect(virtualMachineSnapshotSpec.parse(spec)).toEqual(spec);
  });

  it.each([
    [{ source, snapshotMode: "External" }, "snapshotMode"],
    [{ source, overlayScratchSize: "1Gi" }, ""],
    [{ source, failureDeadline: "5 minutes" }, "failureDeadline"],
    [{ source: { ...source, kind: "VirtualMachineInstance" } }, "source.kind"],
  ])("refuses %j, naming the field", (spec, path) => {
    const result = virtualMachineSnapshotSpec.safeParse(spec);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path.join(".")).toBe(path);
  });
});
