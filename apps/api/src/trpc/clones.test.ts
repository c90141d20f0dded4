import type { VirtualMachineClone } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { cloneView, newClone } from "./clones.ts";

describe("a clone as the dashboard makes and shows it", () => {
  const clone = (status: VirtualMachineClone["status"]): VirtualMachineClone => {
    const made = newClone("ns", "web", "web-copy");
    return {
      ...made,
      metadata: { ...made.metadata, name: "clone-web-copy-x1", creationTimestamp: "2026-01-01T12:00:00Z" },
      status,
    };
  };
  const condition = (type: string, status: "True" | "False", message: string) => ({ type, status, message });

  it("names the VM and the new VM as KubeVirt's references, leaving the API server to make its name unique", () => {
    const made = newClone("ns", "web", "a".repeat(63), { default: "02:00:00:00:00:01" });
    expect(made.metadata.generateName).toHaveLength(58);
    expect(made.spec).toEqual({
      source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "web" },
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "a".repeat(63) },
      newMacAddresses: { default: "02:00:00:00:00:01" },
    });
    expect(newClone("ns", "web", "web-copy").spec).not.toHaveProperty("newMacAddresses");
  });

  it.each([
    ["not started", undefined, { phase: "", succeeded: false, failed: false, message: undefined }],
    [
      "under way, saying what it does",
      {
        phase: "SnapshotInProgress" as const,
        conditions: [
          condition("Progressing", "True", "Taking snapshot s"),
          condition("Ready", "False", "Taking snapshot s"),
        ],
      },
      { phase: "SnapshotInProgress", succeeded: false, failed: false, message: "Taking snapshot s" },
    ],
    [
      "done",
      { phase: "Succeeded" as const, targetName: "web-copy", conditions: [condition("Ready", "True", "Ready")] },
      { phase: "Succeeded", succeeded: true, failed: false, target: "web-copy" },
    ],
    [
      "failed, saying why",
      {
        phase: "Failed" as const,
        conditions: [condition("Progressing", "False", "old"), condition("Ready", "False", "the restore r failed")],
      },
      { phase: "Failed", failed: true, message: "the restore r failed" },
    ],
  ])("%s", (_, status, view) => {
    expect(cloneView(clone(status))).toMatchObject({
      name: "clone-web-copy-x1",
      created: "2026-01-01T12:00:00Z",
      source: "web",
      target: "web-copy",
      ...view,
    });
  });
});
