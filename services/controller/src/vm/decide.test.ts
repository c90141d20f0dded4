import type { RunStrategy, StateChangeRequest } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type ObservedVmi, type VmObservation, backoffMs, decide } from "./decide.ts";

const now = new Date("2026-01-01T00:00:00Z");
const running: ObservedVmi = { uid: "vmi-1", phase: "Running", deleting: false, ran: true };
const succeeded: ObservedVmi = { uid: "vmi-1", phase: "Succeeded", deleting: false, ran: true };
/** A VMI that failed before its guest ever ran: a start failure. */
const failed: ObservedVmi = { uid: "vmi-1", phase: "Failed", deleting: false, ran: false };
const deleting: ObservedVmi = { uid: "vmi-1", phase: "Running", deleting: true, ran: true };

function given(runStrategy: RunStrategy, vmi?: ObservedVmi, extra: Partial<VmObservation> = {}): VmObservation {
  return { runStrategy, previousRunStrategy: runStrategy, requests: [], vmi, startFailure: undefined, now, ...extra };
}

const start: StateChangeRequest = { action: "Start" };
const stopOf = (uid?: string): StateChangeRequest => (uid ? { action: "Stop", uid } : { action: "Stop" });

describe("run strategies", () => {
  it.each([
    ["Always without a VMI creates one", given("Always"), "create"],
    ["Always with a running VMI does nothing", given("Always", running), "none"],
    ["Always with a finished VMI deletes it (to start anew)", given("Always", succeeded), "delete"],
    ["Always with a failed VMI deletes it", given("Always", failed), "delete"],
    ["Always waits while a VMI is being deleted", given("Always", deleting), "none"],
    ["Halted deletes a running VMI", given("Halted", running), "delete"],
    ["Halted without a VMI does nothing", given("Halted"), "none"],
    ["Manual without a VMI does nothing", given("Manual"), "none"],
    ["Manual leaves a finished VMI alone", given("Manual", succeeded), "none"],
    [
      "RerunOnFailure starts when the VM takes the strategy",
      given("RerunOnFailure", undefined, { previousRunStrategy: undefined }),
      "create",
    ],
    ["RerunOnFailure does not restart a VMI that was stopped", given("RerunOnFailure"), "none"],
    ["RerunOnFailure restarts a failed VMI", given("RerunOnFailure", failed), "delete"],
    ["RerunOnFailure deletes a succeeded VMI without starting another", given("RerunOnFailure", succeeded), "delete"],
    [
      "Once starts when the VM takes the strategy",
      given("Once", undefined, { previousRunStrategy: "Halted" }),
      "create",
    ],
    ["Once never starts again", given("Once"), "none"],
    ["Once leaves a finished VMI alone", given("Once", failed), "none"],
  ] as const)("%s", (_name, observation, action) => {
    expect(decide(observation).action.kind).toBe(action);
  });

  it("RerunOnFailure asks for a start after deleting a failed VMI", () => {
    expect(decide(given("RerunOnFailure", failed)).requests).toEqual([start]);
  });

  it("RerunOnFailure asks for no start after deleting a succeeded VMI", () => {
    expect(decide(given("RerunOnFailure", succeeded)).requests).toEqual([]);
  });
});

describe("start and stop requests", () => {
  it.each([
    [
      "a start creates the VMI of a Manual VM and stays pending",
      given("Manual", undefined, { requests: [start] }),
      "create",
      [start],
    ],
    ["a start is done once the VMI runs", given("Manual", running, { requests: [start] }), "none", []],
    [
      "a start of a finished VMI deletes it first",
      given("Manual", succeeded, { requests: [start] }),
      "delete",
      [start],
    ],
    [
      "a start on a Halted VM waits for the run strategy its paused start sets next",
      given("Halted", undefined, { requests: [start] }),
      "none",
      [start],
    ],
    [
      "a stop deletes the running VMI and stays pending",
      given("Manual", running, { requests: [stopOf()] }),
      "delete",
      [stopOf()],
    ],
    ["a stop is done once the VMI is gone", given("Manual", undefined, { requests: [stopOf()] }), "none", []],
    ["a stop for an older VMI is done", given("Manual", running, { requests: [stopOf("older")] }), "none", []],
    [
      "a restart stops the current VMI first",
      given("Always", running, { requests: [stopOf("vmi-1"), start] }),
      "delete",
      [stopOf("vmi-1"), start],
    ],
    [
      "a restart starts anew once the old VMI is gone",
      given("Always", undefined, { requests: [stopOf("vmi-1"), start] }),
      "create",
      [start],
    ],
    [
      "a restart is done once the new VMI runs",
      given("Always", { ...running, uid: "vmi-2" }, { requests: [stopOf("vmi-1"), start] }),
      "none",
      [],
    ],
  ] as const)("%s", (_name, observation, action, requests) => {
    const decision = decide(observation);
    expect(decision.action.kind).toBe(action);
    expect(decision.requests).toEqual(requests);
  });
});

describe("crash-loop back-off", () => {
  it("waits until retryAfterTimestamp before creating again", () => {
    const retryAfter = new Date(now.getTime() + 20_000).toISOString();
    const decision = decide(
      given("Always", undefined, { startFailure: { consecutiveFailCount: 2, retryAfterTimestamp: retryAfter } }),
    );
    expect(decision.action).toEqual({ kind: "backoff", untilMs: Date.parse(retryAfter) });
  });

  it("creates once retryAfterTimestamp has passed", () => {
    const decision = decide(
      given("Always", undefined, {
        startFailure: { consecutiveFailCount: 2, retryAfterTimestamp: "2025-12-31T23:59:00Z" },
      }),
    );
    expect(decision.action.kind).toBe("create");
  });

  it.each([
    [1, 10_000],
    [2, 20_000],
    [3, 40_000],
    [10, 300_000],
  ])("after %d failures it waits %d ms", (failures, ms) => {
    expect(backoffMs(failures)).toBe(ms);
  });

  it("creates the VMI paused for a start request that asks so (virtctl start --paused), and not otherwise", () => {
    expect(
      decide(given("Manual", undefined, { requests: [{ action: "Start", data: { paused: "true" } }] })).action,
    ).toEqual({ kind: "create", paused: true });
    expect(decide(given("Manual", undefined, { requests: [{ action: "Start" }] })).action).toEqual({ kind: "create" });
  });

  it("marks the deletion of a VMI that failed before it ran as a start failure, as KubeVirt counts them", () => {
    expect(decide(given("Always", failed)).action).toEqual({
      kind: "delete",
      uid: "vmi-1",
      failed: true,
      failedEarly: true,
    });
  });

  it("restarts a guest that ran and then failed without counting a start failure", () => {
    expect(decide(given("Always", { ...failed, ran: true })).action).toEqual({
      kind: "delete",
      uid: "vmi-1",
      failed: true,
      failedEarly: false,
    });
  });
});

describe("a restore in progress", () => {
  it("holds the start of an Always VM until the restore is done", () => {
    expect(decide(given("Always", undefined, { restoreInProgress: "r1" })).action.kind).toBe("none");
    expect(decide(given("Always")).action.kind).toBe("create");
  });

  it("keeps a start request pending meanwhile", () => {
    const decision = decide(given("Manual", undefined, { requests: [start], restoreInProgress: "r1" }));
    expect(decision.action.kind).toBe("none");
    expect(decision.requests).toEqual([start]);
  });

  it("still stops a VM", () => {
    expect(decide(given("Halted", running, { restoreInProgress: "r1" })).action.kind).toBe("delete");
  });
});

describe("a snapshot in progress", () => {
  it("holds a start until the snapshot is done, its request pending, and still stops a VM", () => {
    const held = decide(given("Manual", undefined, { requests: [start], snapshotInProgress: "s1" }));
    expect(held.action.kind).toBe("none");
    expect(held.requests).toEqual([start]);
    expect(decide(given("Always", undefined, { snapshotInProgress: "s1" })).action.kind).toBe("none");
    expect(decide(given("Halted", running, { snapshotInProgress: "s1" })).action.kind).toBe("delete");
  });
});
