import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import type { VmAction } from "./decide.ts";
import { type VmStatusInput, deriveVmStatus, printableStatus } from "./status.ts";

const now = new Date("2026-01-01T00:00:00Z");
const vm = (mutate: (vm: VirtualMachine) => void = () => undefined): VirtualMachine => {
  const value: VirtualMachine = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name: "vm", namespace: "ns", uid: "vm-uid", generation: 3 },
    spec: { runStrategy: "Always", template: { spec: { domain: { devices: {} } } } },
  };
  mutate(value);
  return value;
};
const vmi = (
  phase: string,
  conditions: { type: string; status: "True" | "False"; reason?: string }[] = [],
  deleting = false,
): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: {
    name: "vm",
    namespace: "ns",
    uid: "vmi-uid",
    ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
  },
  spec: { domain: { devices: {} } },
  status: { phase: phase as "Running", conditions },
});
const none: VmAction = { kind: "none" };

function input(partial: Partial<VmStatusInput>): VmStatusInput {
  return {
    vm: vm(),
    vmi: undefined,
    runStrategy: "Always",
    requests: [],
    action: none,
    startFailure: undefined,
    syncError: undefined,
    now,
    ...partial,
  };
}

describe("printableStatus", () => {
  it.each([
    [
      "a VM being deleted is Terminating",
      input({ vm: vm((v) => (v.metadata.deletionTimestamp = "2026-01-01T00:00:00Z")), vmi: vmi("Running") }),
      "Terminating",
    ],
    ["a VMI being deleted is Stopping", input({ vmi: vmi("Running", [], true) }), "Stopping"],
    [
      "a Halted VM with a running VMI is Stopping",
      input({
        runStrategy: "Halted",
        vmi: vmi("Running"),
        action: { kind: "delete", uid: "vmi-uid", failed: false, failedEarly: false },
      }),
      "Stopping",
    ],
    ["a running VMI is Running", input({ vmi: vmi("Running") }), "Running"],
    ["a paused VMI is Paused", input({ vmi: vmi("Running", [{ type: "Paused", status: "True" }]) }), "Paused"],
    [
      "a VMI moving to another node is Migrating",
      input({
        vmi: {
          ...vmi("Running"),
          status: { phase: "Running", migrationState: { migrationUid: "m1", targetNode: "node-b" } },
        },
      }),
      "Migrating",
    ],
    [
      "a VMI whose migration completed is Migrating until it is on its target's node",
      input({
        vmi: {
          ...vmi("Running"),
          status: {
            phase: "Running",
            nodeName: "node-a",
            migrationState: { migrationUid: "m1", targetNode: "node-b", completed: true },
          },
        },
      }),
      "Migrating",
    ],
    [
      "a VMI on its migration's target node is Running",
      input({
        vmi: {
          ...vmi("Running"),
          status: {
            phase: "Running",
            nodeName: "node-b",
            migrationState: { migrationUid: "m1", targetNode: "node-b", completed: true },
          },
        },
      }),
      "Running",
    ],
    [
      "a VMI whose claim is missing is ErrorPvcNotFound",
      input({ vmi: vmi("Pending", [{ type: "Synchronized", status: "False", reason: "FailedPvcNotFound" }]) }),
      "ErrorPvcNotFound",
    ],
    [
      "a starting VM whose claim is not bound yet is WaitingForVolumeBinding",
      input({ vmi: vmi("Scheduling"), unboundClaims: true }),
      "WaitingForVolumeBinding",
    ],
    [
      "a stopped VM whose claim is not bound is Stopped",
      input({ runStrategy: "Halted", unboundClaims: true }),
      "Stopped",
    ],
    [
      "an unschedulable launcher is ErrorUnschedulable",
      input({ vmi: vmi("Scheduling", [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }]) }),
      "ErrorUnschedulable",
    ],
    [
      "an image that cannot be pulled is ErrImagePull",
      input({ vmi: vmi("Scheduling", [{ type: "Synchronized", status: "False", reason: "ErrImagePull" }]) }),
      "ErrImagePull",
    ],
    ["a scheduling VMI is Starting", input({ vmi: vmi("Scheduling") }), "Starting"],
    ["a VMI being created is Starting", input({ action: { kind: "create" } }), "Starting"],
    ["a VM in back-off is CrashLoopBackOff", input({ action: { kind: "backoff", untilMs: 0 } }), "CrashLoopBackOff"],
    ["a VM without a VMI is Stopped", input({ runStrategy: "Halted" }), "Stopped"],
    ["a VM whose VMI succeeded is Stopped", input({ runStrategy: "Manual", vmi: vmi("Succeeded") }), "Stopped"],
  ])("%s", (_name, given, expected) => {
    expect(printableStatus(given)).toBe(expected);
  });
});

describe("deriveVmStatus", () => {
  it("reports created, ready, the run strategy in effect and the generation observed", () => {
    const status = deriveVmStatus(input({ vmi: vmi("Running", [{ type: "Ready", status: "True" }]) }));
    expect(status).toMatchObject({
      created: true,
      ready: true,
      runStrategy: "Always",
      observedGeneration: 3,
      printableStatus: "Running",
    });
    expect(status.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
  });

  it("takes the VMI's Ready condition as it is: a ready VM carries no reason for not being ready", () => {
    const ready = deriveVmStatus(input({ vmi: vmi("Running", [{ type: "Ready", status: "True" }]) })).conditions?.find(
      (c) => c.type === "Ready",
    );
    expect(ready).toMatchObject({ status: "True" });
    expect(ready?.reason).toBeUndefined();
    expect(ready?.message).toBeUndefined();
    const notYet = deriveVmStatus(input({ vmi: vmi("Scheduled") })).conditions?.find((c) => c.type === "Ready");
    expect(notYet).toMatchObject({ status: "False", reason: "VMINotReady" });
    const paused = deriveVmStatus(
      input({ vmi: vmi("Running", [{ type: "Ready", status: "False", reason: "Paused" }]) }),
    ).conditions?.find((c) => c.type === "Ready");
    expect(paused).toMatchObject({ status: "False", reason: "Paused" });
  });

  it("records the run strategy only once a VMI was made, as KubeVirt does", () => {
    expect(deriveVmStatus(input({ runStrategy: "RerunOnFailure" })).runStrategy).toBeUndefined();
    expect(deriveVmStatus(input({ runStrategy: "RerunOnFailure", action: { kind: "create" } })).runStrategy).toBe(
      "RerunOnFailure",
    );
    expect(
      deriveVmStatus(input({ runStrategy: "Halted", vm: { ...vm(), status: { runStrategy: "Always" } } })).runStrategy,
    ).toBe("Halted");
  });

  it("sets the Failure condition from a sync error and clears it once the sync succeeds", () => {
    const failedStatus = deriveVmStatus(input({ syncError: { reason: "FailedCreate", message: "quota exceeded" } }));
    expect(failedStatus.conditions?.find((c) => c.type === "Failure")).toMatchObject({
      status: "True",
      reason: "FailedCreate",
      message: "quota exceeded",
    });
    const recovered = deriveVmStatus(input({ vm: vm((v) => (v.status = failedStatus)) }));
    expect(recovered.conditions?.find((c) => c.type === "Failure")).toBeUndefined();
  });

  it("keeps the snapshot and the restore under way, which their controllers write", () => {
    const marked = vm((v) => (v.status = { snapshotInProgress: "snap", restoreInProgress: "restore" }));
    const status = deriveVmStatus(input({ vm: marked, vmi: vmi("Running") }));
    expect(status).toMatchObject({ snapshotInProgress: "snap", restoreInProgress: "restore" });
  });

  it("derives the same status from the same observation, so nothing is written twice", () => {
    const first = deriveVmStatus(input({ vmi: vmi("Scheduling") }));
    const second = deriveVmStatus(
      input({ vm: vm((v) => (v.status = first)), vmi: vmi("Scheduling"), now: new Date(now.getTime() + 60_000) }),
    );
    expect(second).toEqual(first);
  });
});

describe("RestartRequired", () => {
  const message = "a non-live-updatable field was changed in the template spec";
  it("is set, as KubeVirt's, when the running VM's template changed since its start, and removed when not", () => {
    const required = deriveVmStatus(input({ vmi: vmi("Running"), restartRequired: true }));
    expect(required.conditions?.find((c) => c.type === "RestartRequired")).toMatchObject({ status: "True", message });
    const after = deriveVmStatus(
      input({ vm: vm((v) => (v.status = required)), vmi: vmi("Running"), restartRequired: false }),
    );
    expect(after.conditions?.find((c) => c.type === "RestartRequired")).toBeUndefined();
  });
});
