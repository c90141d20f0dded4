import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type WorkloadUpdateInput, batchIntervalMs, planWorkloadUpdate } from "./decide.ts";

const NOW = new Date("2026-11-28T12:00:00Z");

function vmi(
  name: string,
  facts: { outdated?: boolean; migratable?: boolean; phase?: "Running" | "Scheduled"; migrating?: boolean } = {},
): VirtualMachineInstance {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: {
      name,
      namespace: "ns",
      ...(facts.outdated !== false ? { labels: { "kubevirt.io/outdatedLauncherImage": "" } } : {}),
    },
    spec: { domain: { devices: {} } },
    status: {
      phase: facts.phase ?? "Running",
      conditions: [{ type: "LiveMigratable", status: facts.migratable === false ? "False" : "True" }],
      ...(facts.migrating ? { migrationState: { migrationUid: "m-1", startTimestamp: "2026-11-28T11:59:00Z" } } : {}),
    },
  };
}

const migration = (vmiName: string, phase?: string): VirtualMachineInstanceMigration => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstanceMigration",
  metadata: { name: `m-${vmiName}`, namespace: "ns" },
  spec: { vmiName },
  ...(phase ? { status: { phase: phase as "Running" } } : {}),
});

const plan = (input: Partial<WorkloadUpdateInput>) =>
  planWorkloadUpdate({
    strategy: undefined,
    vmis: [],
    migrations: [],
    parallelMigrations: 5,
    lastEvictionBatch: undefined,
    now: NOW,
    ...input,
  });
const names = (list: readonly VirtualMachineInstance[]) => list.map((v) => v.metadata.name);

describe("planWorkloadUpdate", () => {
  const fleet = [
    vmi("a-movable"),
    vmi("b-pinned", { migratable: false }),
    vmi("c-current", { outdated: false }),
    vmi("d-starting", { phase: "Scheduled" }),
  ];

  it("counts the running outdated VMIs and moves none without a method", () => {
    expect(plan({ vmis: fleet })).toEqual({ outdated: 2, migrate: [], evict: [], pending: false });
    expect(plan({ vmis: fleet, strategy: {} }).outdated).toBe(2);
  });

  it("migrates the outdated VMIs that can move and evicts the others, as the methods say", () => {
    const both = plan({ vmis: fleet, strategy: { workloadUpdateMethods: ["LiveMigrate", "Evict"] } });
    expect(names(both.migrate)).toEqual(["a-movable"]);
    expect(names(both.evict)).toEqual(["b-pinned"]);
    expect(both.pending).toBe(true);
    const migrateOnly = plan({ vmis: fleet, strategy: { workloadUpdateMethods: ["LiveMigrate"] } });
    expect([names(migrateOnly.migrate), names(migrateOnly.evict)]).toEqual([["a-movable"], []]);
    // Evict alone evicts even a VMI that could move: the least disruptive method is the one listed.
    const evictOnly = plan({ vmis: fleet, strategy: { workloadUpdateMethods: ["Evict"] } });
    expect([names(evictOnly.migrate), names(evictOnly.evict)]).toEqual([[], ["a-movable", "b-pinned"]]);
  });

  it("acts on no VMI that moves already, and makes no more migrations than the cluster runs at once", () => {
    const many = ["v1", "v2", "v3", "v4"].map((n) => vmi(n));
    const moving = plan({
      vmis: [...many, vmi("v5", { migrating: true })],
      migrations: [migration("v1", "Running"), migration("old", "Succeeded")],
      parallelMigrations: 2,
      strategy: { workloadUpdateMethods: ["LiveMigrate"] },
    });
    expect(moving.outdated).toBe(5);
    // v1 has a migration and v5 migrates; one running migration of 2 leaves room for one.
    expect(names(moving.migrate)).toEqual(["v2"]);
  });

  it("evicts at most batchEvictionSize per batchEvictionInterval", () => {
    const pinned = ["p1", "p2", "p3"].map((n) => vmi(n, { migratable: false }));
    const strategy = {
      workloadUpdateMethods: ["Evict" as const],
      batchEvictionSize: 2,
      batchEvictionInterval: "5m",
    };
    expect(names(plan({ vmis: pinned, strategy }).evict)).toEqual(["p1", "p2"]);
    const soon = plan({ vmis: pinned, strategy, lastEvictionBatch: new Date(NOW.getTime() - 4 * 60_000) });
    expect(soon.evict).toEqual([]);
    expect(soon.pending).toBe(true);
    const later = plan({ vmis: pinned, strategy, lastEvictionBatch: new Date(NOW.getTime() - 5 * 60_000) });
    expect(names(later.evict)).toEqual(["p1", "p2"]);
    // KubeVirt's defaults: 10 per minute.
    expect(batchIntervalMs(undefined)).toBe(60_000);
    expect(batchIntervalMs({ batchEvictionInterval: "1m30s" })).toBe(90_000);
  });
});
