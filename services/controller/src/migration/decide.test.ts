import type { Pod } from "@kubevirt-ts/kube";
import type {
  MigrationPhase,
  MigrationState,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type MigrationObservation, decideMigration } from "./decide.ts";

const now = new Date("2026-01-01T00:10:00Z");
const timeouts = { unschedulableSeconds: 300, pendingSeconds: 900 };

const migration = (
  phase?: MigrationPhase,
  extra: Partial<VirtualMachineInstanceMigration["metadata"]> = {},
): VirtualMachineInstanceMigration => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstanceMigration",
  metadata: { name: "m", namespace: "ns", uid: "m1", creationTimestamp: "2026-01-01T00:00:00Z", ...extra },
  spec: { vmiName: "web" },
  ...(phase ? { status: { phase } } : {}),
});

const vmi = (
  state?: MigrationState,
  extra: Partial<NonNullable<VirtualMachineInstance["status"]>> = {},
): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "web", namespace: "ns", uid: "v1" },
  spec: { domain: { devices: {} } },
  status: {
    phase: "Running",
    nodeName: "node-a",
    conditions: [{ type: "LiveMigratable", status: "True" }],
    ...(state ? { migrationState: state } : {}),
    ...extra,
  },
});

const pod = (
  name: string,
  nodeName: string | undefined,
  status: Pod["status"] = { phase: "Pending" },
  created = "2026-01-01T00:09:00Z",
): Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: "ns",
    uid: `${name}-uid`,
    creationTimestamp: created,
    labels: { "kubevirt.io/migrationJobUID": "m1" },
  },
  spec: { containers: [], ...(nodeName ? { nodeName } : {}) },
  status,
});
const source = pod("source", "node-a", { phase: "Running" });

const observe = (o: Partial<MigrationObservation>): MigrationObservation => ({
  migration: migration(),
  vmi: vmi(),
  sourcePod: source,
  targetPods: [],
  held: undefined,
  timeouts,
  now,
  ...o,
});
const handoff: MigrationState = {
  migrationUid: "m1",
  sourceNode: "node-a",
  sourcePod: "source",
  targetNode: "node-b",
  targetPod: "target",
  startTimestamp: "2026-01-01T00:09:30Z",
};

describe("decideMigration: the controller's phases", () => {
  it("makes the target pod of a new migration: Scheduling", () => {
    expect(decideMigration(observe({}))).toMatchObject({ createTargetPod: true, status: { phase: "Scheduling" } });
  });

  it("holds it in Pending while the parallel limits are reached", () => {
    const decision = decideMigration(observe({ held: "5 migrations are in flight" }));
    expect(decision).toMatchObject({ status: { phase: "Pending" }, requeueAfterMs: 3_000 });
    expect(decision.createTargetPod).toBeUndefined();
  });

  it.each([
    ["not running", vmi(undefined, { phase: "Scheduled" }), /is not running/],
    [
      "not migratable",
      vmi(undefined, { conditions: [{ type: "LiveMigratable", status: "False", reason: "DisksNotLiveMigratable" }] }),
      /not live migratable/,
    ],
    ["gone", undefined, /does not exist/],
  ])("fails a migration whose VMI is %s", (_, v, reason) => {
    const decision = decideMigration(observe({ vmi: v }));
    expect(decision.status.phase).toBe("Failed");
    expect(decision.event?.message).toMatch(reason);
  });

  it("waits for the target pod to be bound, then hands over in one write of the VMI: Scheduled", () => {
    expect(
      decideMigration(observe({ migration: migration("Scheduling"), targetPods: [pod("target", undefined)] })),
    ).toMatchObject({ status: { phase: "Scheduling" }, requeueAfterMs: 840_000 });
    const decision = decideMigration(
      observe({ migration: migration("Scheduling"), targetPods: [pod("target", "node-b")] }),
    );
    expect(decision).toMatchObject({
      status: { phase: "Scheduled" },
      targetNodeLabel: "node-b",
      vmiState: { ...handoff, startTimestamp: "2026-01-01T00:10:00Z" },
    });
  });

  it(
    "fails a migration whose target pod stayed unschedulable past the timeout, " +
      "deleting the pod and saying why in the VMI",
    () => {
      const unschedulable = pod("target", undefined, {
        phase: "Pending",
        conditions: [
          {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "0/2 nodes are available",
            lastTransitionTime: "2026-01-01T00:05:00Z",
          },
        ],
      });
      const decision = decideMigration(observe({ migration: migration("Scheduling"), targetPods: [unschedulable] }));
      expect(decision).toMatchObject({
        status: { phase: "Failed" },
        deleteTargetPods: [unschedulable],
        vmiState: {
          migrationUid: "m1",
          failed: true,
          failureReason: expect.stringMatching(/unschedulable for 300 s: 0\/2 nodes/) as unknown,
        },
      });
    },
  );

  it("fails one pending past the catch-all timeout", () => {
    const stuck = pod("target", undefined, { phase: "Pending" }, "2025-12-31T23:55:00Z");
    expect(decideMigration(observe({ migration: migration("Scheduling"), targetPods: [stuck] })).status.phase).toBe(
      "Failed",
    );
  });
});

describe("decideMigration: the handlers' phases, from the VMI's migrationState", () => {
  const target = pod("target", "node-b", { phase: "Running" });
  it.each([
    [handoff, "PreparingTarget"],
    [{ ...handoff, targetNodeAddress: "10.0.0.2" }, "TargetReady"],
    [{ ...handoff, targetNodeAddress: "10.0.0.2", mode: "PreCopy" as const }, "Running"],
    [{ ...handoff, mode: "PreCopy" as const, completed: true }, "Succeeded"],
  ])("%j: %s", (state, phase) => {
    const decision = decideMigration(
      observe({ migration: migration("Scheduled"), vmi: vmi(state), targetPods: [target] }),
    );
    expect(decision.status).toMatchObject({ phase, migrationState: state });
    expect(decision.deleteTargetPods ?? []).toEqual([]);
  });

  it("deletes the target pod of a migration a handler failed", () => {
    const decision = decideMigration(
      observe({
        migration: migration("Running"),
        vmi: vmi({ ...handoff, failed: true, failureReason: "libvirt said no" }),
        targetPods: [target],
      }),
    );
    expect(decision).toMatchObject({ status: { phase: "Failed" }, deleteTargetPods: [target] });
  });

  it("fails a migration whose target pod is gone, in the VMI too", () => {
    expect(
      decideMigration(observe({ migration: migration("PreparingTarget"), vmi: vmi(handoff), targetPods: [] })),
    ).toMatchObject({
      status: { phase: "Failed" },
      vmiState: { failed: true, failureReason: "the target pod target is gone" },
    });
  });
});

describe("decideMigration: cancelling by deleting the migration", () => {
  const deleting = (phase: "Scheduling" | "Running") => migration(phase, { deletionTimestamp: "2026-01-01T00:09:59Z" });
  const target = pod("target", "node-b", { phase: "Running" });

  it("before the hand-over: deletes the target pod, then lets the migration go", () => {
    const unbound = pod("target", undefined);
    expect(decideMigration(observe({ migration: deleting("Scheduling"), targetPods: [unbound] }))).toMatchObject({
      deleteTargetPods: [unbound],
      release: false,
    });
    expect(decideMigration(observe({ migration: deleting("Scheduling"), targetPods: [] }))).toMatchObject({
      release: true,
    });
  });

  it("after it: asks the source's handler to abort, and waits for its answer", () => {
    const running = { ...handoff, targetNodeAddress: "10.0.0.2", mode: "PreCopy" as const };
    expect(
      decideMigration(observe({ migration: deleting("Running"), vmi: vmi(running), targetPods: [target] })),
    ).toMatchObject({ vmiState: { ...running, abortRequested: true }, status: { phase: "Running" } });
    const aborting = { ...running, abortRequested: true, abortStatus: "Aborting" as const };
    const waiting = decideMigration(
      observe({ migration: deleting("Running"), vmi: vmi(aborting), targetPods: [target] }),
    );
    expect(waiting.vmiState).toBeUndefined();
    expect(waiting.release).toBeUndefined();
    const aborted = {
      ...aborting,
      abortStatus: "Succeeded" as const,
      failed: true,
      failureReason: "Migration aborted",
    };
    expect(
      decideMigration(observe({ migration: deleting("Running"), vmi: vmi(aborted), targetPods: [target] })),
    ).toMatchObject({ deleteTargetPods: [target], release: false });
  });
});
