import type {
  MigrationPhase,
  MigrationState,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { evacuationBackoffMs, needsEvacuation } from "./evacuation.ts";

const migration = (created: string, phase: MigrationPhase, ended = created): VirtualMachineInstanceMigration => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstanceMigration",
  metadata: { name: created, creationTimestamp: created },
  spec: { vmiName: "web" },
  status: { phase, phaseTransitionTimestamps: [{ phase, phaseTransitionTimestamp: ended }] },
});
const now = new Date("2026-01-01T01:00:00Z");

describe("evacuationBackoffMs, KubeVirt's backoff after failed migrations", () => {
  it.each([
    ["no migration before", [], 0],
    [
      "the last one succeeded",
      [migration("2026-01-01T00:59:50Z", "Succeeded"), migration("2026-01-01T00:59:00Z", "Failed")],
      0,
    ],
    ["one failed 5 s ago: 20 s from its end", [migration("2026-01-01T00:59:55Z", "Failed")], 15_000],
    [
      "two in a row, the last 5 s ago: 40 s",
      [migration("2026-01-01T00:59:55Z", "Failed"), migration("2026-01-01T00:59:00Z", "Failed")],
      35_000,
    ],
    [
      "ten in a row: at most 5 min",
      Array.from({ length: 10 }, (_, i) => migration(`2026-01-01T00:59:${String(50 - i).padStart(2, "0")}Z`, "Failed")),
      290_000,
    ],
    ["one failed long ago", [migration("2026-01-01T00:00:00Z", "Failed")], 0],
  ])("%s", (_, migrations, wait) => {
    expect(evacuationBackoffMs(migrations, now)).toBe(wait);
  });
});

const marked = (migrationState?: MigrationState, nodeName = "node-a"): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "web", namespace: "default" },
  spec: { domain: { devices: {} }, evictionStrategy: "LiveMigrate" },
  status: {
    phase: "Running",
    nodeName,
    evacuationNodeName: "node-a",
    conditions: [{ type: "LiveMigratable", status: "True" }],
    ...(migrationState ? { migrationState } : {}),
  },
});

describe("needsEvacuation", () => {
  it.each([
    ["marked, on the node its drain named", marked(), true],
    [
      "its last migration failed: it is still on that node",
      marked({ migrationUid: "m1", sourceNode: "node-a", targetNode: "node-b", failed: true }),
      true,
    ],
    [
      "its migration runs",
      marked({ migrationUid: "m1", sourceNode: "node-a", targetNode: "node-b", mode: "PreCopy" }),
      false,
    ],
    // The window in which a second migration was once made: Succeeded, the VMI not yet moved by its controller.
    [
      "its migration completed, the VMI not yet moved to the target",
      marked({ migrationUid: "m1", sourceNode: "node-a", targetNode: "node-b", completed: true }),
      false,
    ],
    [
      "moved to the target, the mark of another node",
      marked({ migrationUid: "m1", sourceNode: "node-a", targetNode: "node-b", completed: true }, "node-b"),
      false,
    ],
    // Migrated here earlier (node-b to node-a), and now its new node is drained: it moves again.
    [
      "migrated to the drained node earlier",
      marked({ migrationUid: "m0", sourceNode: "node-b", targetNode: "node-a", completed: true }),
      true,
    ],
  ])("%s: %s", (_, vmi, needed) => {
    expect(needsEvacuation(vmi, "None")).toBe(needed);
  });
});
