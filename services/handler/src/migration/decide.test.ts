import type { MigrationStatus } from "@kubevirt-ts/launcher-protocol";
import { describe, expect, it } from "vitest";
import { MIGRATION_ABORTED_REASON } from "@kubevirt-ts/vm-rules";
import type { MigrationState } from "@kubevirt-ts/kubevirt-api";
import { changes, migrationOptionsOf, migrationStateOf, sourceStep, targetProxyAddress, targetStep } from "./decide.ts";

const now = new Date("2026-11-26T18:00:00Z");
const handedOver: MigrationState = {
  migrationUid: "m-1",
  sourceNode: "node-a",
  sourcePod: "launcher-a",
  targetNode: "node-b",
  targetPod: "launcher-b",
  startTimestamp: "2026-11-26T17:59:00Z",
};
const proxy = { address: "198.51.100.2", port: 8187 };
const ready: MigrationState = {
  ...handedOver,
  targetNodeAddress: proxy.address,
  targetDirectMigrationNodePorts: { "8187": 0 },
};
const options = {
  postCopy: false,
  autoConverge: false,
  bandwidthMiB: 0,
  completionTimeoutPerGiB: 150,
  progressTimeout: 150,
  allowNonSharedDisks: false,
};
const idle: MigrationStatus = { phase: "None" };
const running = (fields: Partial<MigrationStatus> = {}): MigrationStatus => ({
  role: "Source",
  migrationUid: "m-1",
  phase: "Running",
  mode: "PreCopy",
  startTimestamp: "2026-11-26T17:59:30Z",
  ...fields,
});

describe("the target handler's step", () => {
  const step = (
    state: MigrationState | undefined,
    launcher: MigrationStatus | undefined,
    targetPodRunning = true,
    nodeName = "node-b",
  ) => targetStep({ state, nodeName, targetPodRunning, launcher, proxy, now });

  it("does nothing for a VMI without a migration, or one going to another node", () => {
    expect(step(undefined, undefined)).toEqual({});
    expect(step(handedOver, undefined, true, "node-c")).toEqual({});
  });

  it("waits for the target pod to run", () => {
    expect(step(handedOver, undefined, false)).toEqual({});
  });

  it("prepares the target launcher and lets the migration through its proxy", () => {
    expect(step(handedOver, undefined)).toEqual({ prepare: true, allow: true });
    expect(step(handedOver, { phase: "None" })).toEqual({ prepare: true, allow: true });
  });

  it("once prepared, writes where the source sends the guest: its address and its migration port, once", () => {
    expect(step(handedOver, { role: "Target", phase: "Prepared" })).toEqual({
      allow: true,
      patch: { targetNodeAddress: proxy.address, targetDirectMigrationNodePorts: { "8187": 0 } },
    });
    expect(step(ready, { role: "Target", phase: "Prepared" })).toEqual({ allow: true });
  });

  it("says once that the domain runs here, with when", () => {
    expect(step(ready, { role: "Target", phase: "Completed" })).toEqual({
      allow: true,
      patch: { targetNodeDomainDetected: true, targetNodeDomainReadyTimestamp: now.toISOString() },
    });
    expect(step({ ...ready, completed: true }, { role: "Target", phase: "Completed" })).toEqual({
      release: true,
      patch: { targetNodeDomainDetected: true, targetNodeDomainReadyTimestamp: now.toISOString() },
    });
    expect(
      step({ ...ready, completed: true, targetNodeDomainDetected: true }, { role: "Target", phase: "Completed" }),
    ).toEqual({ release: true });
  });

  it("releases the proxy when the migration failed", () => {
    expect(step({ ...ready, failed: true }, { role: "Target", phase: "Prepared" })).toEqual({ release: true });
  });
});

describe("the launcher's options of a migration, from the configuration it was handed over with", () => {
  it("are KubeVirt's defaults without one", () => {
    expect(migrationOptionsOf(ready)).toEqual(options);
  });

  it("take each field of the MigrationPolicy's configuration", () => {
    expect(migrationOptionsOf({ ...ready, migrationConfiguration: { allowAutoConverge: true } })).toEqual({
      ...options,
      autoConverge: true,
    });
    expect(migrationOptionsOf({ ...ready, migrationConfiguration: { bandwidthPerMigration: "2000Mi" } })).toEqual({
      ...options,
      bandwidthMiB: 2000,
    });
    expect(migrationOptionsOf({ ...ready, migrationConfiguration: { completionTimeoutPerGiB: 30 } })).toEqual({
      ...options,
      completionTimeoutPerGiB: 30,
    });
    expect(migrationOptionsOf({ ...ready, migrationConfiguration: { progressTimeout: 0 } })).toEqual({
      ...options,
      progressTimeout: 0,
    });
    expect(migrationOptionsOf({ ...ready, migrationConfiguration: { allowPostCopy: true } })).toEqual({
      ...options,
      postCopy: true,
    });
    // Workload disruption refused: a late migration is aborted rather than switched to post-copy.
    expect(
      migrationOptionsOf({ ...ready, migrationConfiguration: { allowPostCopy: true, allowWorkloadDisruption: false } }),
    ).toEqual(options);
  });

  it("refuse a configuration that is not KubeVirt's, naming it", () => {
    expect(() => migrationOptionsOf({ ...ready, migrationConfiguration: { bandwidthPerMigration: "fast" } })).toThrow(
      /migrationConfiguration/,
    );
  });
});

describe("the source handler's step", () => {
  const step = (state: MigrationState | undefined, launcher: MigrationStatus, nodeName = "node-a") =>
    sourceStep({ state, nodeName, launcher, now });

  it("does nothing for a migration from another node, or before the target is ready", () => {
    expect(step(ready, idle, "node-b")).toEqual({});
    expect(step(handedOver, idle)).toEqual({});
  });

  it("opens its proxy and has the launcher migrate, with the policy's options and the migration's uid", () => {
    expect(step(ready, idle)).toEqual({
      proxy: "start",
      call: { method: "migrate", options: { ...options, migrationUid: "m-1" } },
    });
    const configured = {
      ...ready,
      migrationConfiguration: {
        allowAutoConverge: true,
        allowPostCopy: true,
        bandwidthPerMigration: "64Mi",
        completionTimeoutPerGiB: 0,
      },
    };
    expect(step(configured, idle)).toEqual({
      proxy: "start",
      call: {
        method: "migrate",
        options: {
          ...options,
          postCopy: true,
          autoConverge: true,
          bandwidthMiB: 64,
          completionTimeoutPerGiB: 0,
          migrationUid: "m-1",
        },
      },
    });
    // The launcher's last migration was another one (failed earlier): this one starts.
    expect(step(ready, { role: "Source", migrationUid: "m-0", phase: "Failed" })).toMatchObject({
      call: { method: "migrate" },
    });
  });

  it("writes the mode while it runs, once", () => {
    expect(step(ready, running())).toEqual({ proxy: "start", patch: { mode: "PreCopy" } });
    expect(step({ ...ready, mode: "PreCopy" }, running())).toEqual({ proxy: "start" });
    expect(step({ ...ready, mode: "PreCopy" }, running({ mode: "PostCopy" }))).toEqual({
      proxy: "start",
      patch: { mode: "PostCopy" },
    });
  });

  it("writes completed and the launcher's end time, and closes its proxy", () => {
    expect(
      step({ ...ready, mode: "PreCopy" }, running({ phase: "Completed", endTimestamp: "2026-11-26T17:59:33Z" })),
    ).toEqual({ proxy: "stop", patch: { completed: true, endTimestamp: "2026-11-26T17:59:33Z" } });
    expect(step({ ...ready, completed: true }, running({ phase: "Completed" }))).toEqual({ proxy: "stop" });
  });

  it("writes failed with the launcher's reason", () => {
    expect(
      step(
        ready,
        running({
          phase: "Failed",
          failureReason: "Live migration failed: unable to connect",
          endTimestamp: "2026-11-26T17:59:40Z",
        }),
      ),
    ).toEqual({
      proxy: "stop",
      patch: {
        failed: true,
        failureReason: "Live migration failed: unable to connect",
        endTimestamp: "2026-11-26T17:59:40Z",
      },
    });
  });

  it("aborts when asked, says Aborting, then Succeeded with the aborted reason", () => {
    const asked = { ...ready, mode: "PreCopy" as const, abortRequested: true };
    expect(step(asked, running())).toEqual({
      proxy: "start",
      call: { method: "abortMigration" },
      patch: { abortStatus: "Aborting" },
    });
    expect(step({ ...asked, abortStatus: "Aborting" }, running({ abortStatus: "InProgress" }))).toEqual({
      proxy: "start",
    });
    expect(
      step(
        { ...asked, abortStatus: "Aborting" },
        running({
          phase: "Failed",
          abortStatus: "Succeeded",
          failureReason: "Live migration aborted",
          endTimestamp: "2026-11-26T17:59:50Z",
        }),
      ),
    ).toEqual({
      proxy: "stop",
      patch: {
        failed: true,
        failureReason: MIGRATION_ABORTED_REASON,
        abortStatus: "Succeeded",
        endTimestamp: "2026-11-26T17:59:50Z",
      },
    });
  });

  it("says the abort failed when the migration completed anyway", () => {
    expect(
      step(
        { ...ready, abortRequested: true, abortStatus: "Aborting" },
        running({ phase: "Completed", abortStatus: "Failed", endTimestamp: "2026-11-26T17:59:51Z" }),
      ),
    ).toEqual({
      proxy: "stop",
      patch: { completed: true, mode: "PreCopy", abortStatus: "Failed", endTimestamp: "2026-11-26T17:59:51Z" },
    });
  });

  it("ends a migration cancelled before it started without starting it", () => {
    expect(step({ ...ready, abortRequested: true }, idle)).toEqual({
      proxy: "stop",
      patch: {
        failed: true,
        failureReason: MIGRATION_ABORTED_REASON,
        abortStatus: "Succeeded",
        endTimestamp: now.toISOString(),
      },
    });
  });
});

describe("reading the migration state", () => {
  it("finds the target's proxy from the state, or nothing when it is incomplete", () => {
    expect(targetProxyAddress(ready)).toEqual({ host: proxy.address, port: 8187 });
    expect(targetProxyAddress(handedOver)).toBeUndefined();
    expect(targetProxyAddress({ ...ready, targetDirectMigrationNodePorts: { nope: 0 } })).toBeUndefined();
  });

  it("takes the VMI's status.migrationState, and patches only what changed", () => {
    expect(migrationStateOf({ status: { migrationState: ready } })).toBe(ready);
    expect(migrationStateOf({})).toBeUndefined();
    expect(changes(ready, { targetNodeAddress: proxy.address, mode: "PreCopy" })).toEqual({ mode: "PreCopy" });
    expect(changes(ready, { targetDirectMigrationNodePorts: { "8187": 0 } })).toBeUndefined();
  });
});
