import type { Pod } from "@kubevirt-ts/kube";
import type { MigrationState, VirtualMachineInstance, VmiStatus } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import {
  MAX_EVENT_MESSAGE,
  type SyncEvent,
  domainActionEvent,
  domainDefined,
  domainKilled,
  launcherEndEvents,
  migrationTargetEvents,
  nodeVmiEvents,
} from "./sync-events.ts";

const vmi = (status: VmiStatus, deleting = false): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: {
    name: "vm",
    namespace: "ns",
    uid: "vmi-uid",
    ...(deleting ? { deletionTimestamp: "2026-01-01T00:02:00Z" } : {}),
  },
  spec: { domain: { devices: {} } },
  status: { nodeName: "node-1", activePods: { "pod-uid": "node-1" }, ...status },
});
const launcherPod = (phase: string, exitCode?: number, labels: Record<string, string> = {}): Pod => ({
  metadata: {
    name: "virt-launcher-vm-abcde",
    namespace: "ns",
    uid: "pod-uid",
    labels: { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-uid", ...labels },
    ownerReferences: [
      { apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", name: "vm", uid: "vmi-uid", controller: true },
    ],
  },
  spec: { nodeName: "node-1", containers: [] },
  status: {
    phase,
    containerStatuses: [
      {
        name: "compute",
        ready: false,
        restartCount: 0,
        image: "",
        imageID: "",
        state: exitCode === undefined ? { running: {} } : { terminated: { exitCode } },
      },
    ],
  },
});
const reasons = (events: SyncEvent[]) => events.map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe("KubeVirt's SyncEvents, as the handler records them", () => {
  it("records a start, pause, unpause and stop in KubeVirt's order, each once", () => {
    const scheduled = vmi({ phase: "Scheduled" });
    const running = vmi({ phase: "Running" });
    const paused = vmi({ phase: "Running", conditions: [{ type: "Paused", status: "True" }] });
    const deleting = vmi({ phase: "Running" }, true);
    const events = [
      domainDefined(),
      ...nodeVmiEvents(scheduled, running, "node-1"),
      ...nodeVmiEvents(running, running, "node-1"),
      domainActionEvent("pause"),
      ...nodeVmiEvents(running, paused, "node-1"),
      domainActionEvent("unpause"),
      ...nodeVmiEvents(paused, running, "node-1"),
      ...nodeVmiEvents(running, deleting, "node-1"),
      ...nodeVmiEvents(deleting, deleting, "node-1"),
      ...launcherEndEvents(deleting, launcherPod("Running"), launcherPod("Running", 0), "node-1"),
      ...launcherEndEvents(deleting, launcherPod("Running", 0), launcherPod("Succeeded", 0), "node-1"),
      ...launcherEndEvents(deleting, launcherPod("Succeeded", 0), "deleted", "node-1"),
    ];
    expect(reasons(events)).toEqual([
      "Normal Created: VirtualMachineInstance defined.",
      "Normal Started: VirtualMachineInstance started.",
      "Normal Paused: VirtualMachineInstance paused",
      "Normal Unpaused: VirtualMachineInstance unpaused",
      "Normal ShuttingDown: Signaled Graceful Shutdown",
      "Normal Stopped: The VirtualMachineInstance was shut down.",
    ]);
  });

  it(
    "records a guest that stopped or crashed by itself from its phase, and a " +
      "launcher that failed during a stop as a crash",
    () => {
      const running = vmi({ phase: "Running" });
      expect(reasons(nodeVmiEvents(running, vmi({ phase: "Succeeded" }), "node-1"))).toEqual([
        "Normal Stopped: The VirtualMachineInstance was shut down.",
      ]);
      expect(reasons(nodeVmiEvents(running, vmi({ phase: "Failed" }), "node-1"))).toEqual([
        "Warning Stopped: The VirtualMachineInstance crashed.",
      ]);
      expect(
        reasons(
          launcherEndEvents(
            vmi({ phase: "Running" }, true),
            launcherPod("Running"),
            launcherPod("Failed", 137),
            "node-1",
          ),
        ),
      ).toEqual(["Warning Stopped: The VirtualMachineInstance crashed."]);
      // A pod gone before its end was seen: the guest stopped all the same.
      expect(
        reasons(launcherEndEvents(vmi({ phase: "Running" }, true), launcherPod("Running"), "deleted", "node-1")),
      ).toEqual(["Normal Stopped: The VirtualMachineInstance was shut down."]);
      // A VMI failed before it reached a node is not the handler's to report.
      expect(nodeVmiEvents(vmi({ phase: "Scheduling" }), vmi({ phase: "Failed" }), "node-1")).toEqual([]);
    },
  );

  it(
    "records nothing for another node's VMI, a finished VMI's launcher, a " +
      "migration's target pod, or a forced stop's deletion",
    () => {
      expect(nodeVmiEvents(vmi({ phase: "Scheduled" }), vmi({ phase: "Running" }), "node-2")).toEqual([]);
      expect(
        launcherEndEvents(
          vmi({ phase: "Succeeded" }, true),
          launcherPod("Running"),
          launcherPod("Succeeded", 0),
          "node-1",
        ),
      ).toEqual([]);
      expect(
        launcherEndEvents(
          vmi({ phase: "Running" }, false),
          launcherPod("Running"),
          launcherPod("Succeeded", 0),
          "node-1",
        ),
      ).toEqual([]);
      expect(
        launcherEndEvents(
          vmi({ phase: "Running" }, true),
          launcherPod("Running"),
          launcherPod("Running", undefined, { "kubevirt.io/migrationJobUID": "m" }),
          "node-1",
        ),
      ).toEqual([]);
      expect(
        launcherEndEvents(
          vmi({ phase: "Running" }, true),
          launcherPod("Running", undefined, { "kubevirt.io/migrationJobUID": "m" }),
          "deleted",
          "node-1",
        ),
      ).toEqual([]);
      const forced = {
        ...vmi({ phase: "Running" }, true),
        spec: { domain: { devices: {} }, terminationGracePeriodSeconds: 0 },
      };
      expect(nodeVmiEvents(vmi({ phase: "Running" }), forced, "node-1")).toEqual([]);
      expect(reasons([domainKilled()])).toEqual(["Normal Deleted: VirtualMachineInstance stopping"]);
    },
  );

  it("records a launcher's failure once per failure, bounded, and the access credentials' changes", () => {
    const failing = (message: string) =>
      vmi({
        phase: "Running",
        conditions: [{ type: "Synchronized", status: "False", reason: "LauncherUnreachable", message }],
      });
    const first = nodeVmiEvents(vmi({ phase: "Running" }), failing("x".repeat(5000)), "node-1");
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ type: "Warning", reason: "SyncFailed" });
    expect(first[0]?.message.length).toBe(MAX_EVENT_MESSAGE);
    expect(nodeVmiEvents(failing("a"), failing("b"), "node-1")).toEqual([]);
    const credentials = (status: "True" | "False", reason: string, message: string) =>
      vmi({ phase: "Running", conditions: [{ type: "AccessCredentialsSynchronized", status, reason, message }] });
    const failed = credentials("False", "AccessCredentialsSyncFailed", "no such user");
    expect(reasons(nodeVmiEvents(vmi({ phase: "Running" }), failed, "node-1"))).toEqual([
      "Warning AccessCredentialsSyncFailed: no such user",
    ]);
    expect(
      reasons(
        nodeVmiEvents(
          failed,
          credentials("True", "AccessCredentialsSyncSuccess", "The guest has its access credentials."),
          "node-1",
        ),
      ),
    ).toEqual(["Normal AccessCredentialsSyncSuccess: The guest has its access credentials."]);
    expect(nodeVmiEvents(failed, failed, "node-1")).toEqual([]);
  });

  it(
    "records a migration on both nodes: the source migrating, the target " +
      "prepared and migrated to, a failure on each",
    () => {
      const state = (fields: Partial<MigrationState>) =>
        vmi({
          phase: "Running",
          migrationState: { migrationUid: "m-1", sourceNode: "node-1", targetNode: "node-2", ...fields },
        });
      const pending = state({});
      const listening = state({ targetNodeAddress: "198.18.0.2", targetDirectMigrationNodePorts: { "8443": 0 } });
      const completed = state({ targetNodeAddress: "198.18.0.2", completed: true });
      const failed = state({ targetNodeAddress: "198.18.0.2", failed: true, failureReason: "the target went away" });
      expect(reasons(nodeVmiEvents(pending, listening, "node-1"))).toEqual([
        "Normal Migrating: VirtualMachineInstance is migrating.",
      ]);
      expect(reasons(migrationTargetEvents(pending, listening, "node-2"))).toEqual([
        "Normal PreparingTarget: VirtualMachineInstance Migration Target Prepared.",
      ]);
      expect(nodeVmiEvents(listening, completed, "node-1")).toEqual([]);
      expect(reasons(migrationTargetEvents(listening, completed, "node-2"))).toEqual([
        "Normal Migrated: The VirtualMachineInstance migrated to node node-2.",
      ]);
      const failure = "Warning Migrated: VirtualMachineInstance migration uid m-1 failed. reason:the target went away";
      expect(reasons(nodeVmiEvents(listening, failed, "node-1"))).toEqual([failure]);
      expect(reasons(migrationTargetEvents(listening, failed, "node-2"))).toEqual([failure]);
      // Each node records its own half only, and a later write of the same state records nothing.
      expect(migrationTargetEvents(pending, listening, "node-1")).toEqual([]);
      expect(nodeVmiEvents(completed, completed, "node-1")).toEqual([]);
      expect(migrationTargetEvents(completed, completed, "node-2")).toEqual([]);
    },
  );

  it("records each domain action with KubeVirt's reason", () => {
    expect((["pause", "unpause", "reset", "softReboot"] as const).map((a) => domainActionEvent(a).reason)).toEqual([
      "Paused",
      "Unpaused",
      "Reset",
      "SoftRebooted",
    ]);
  });
});
