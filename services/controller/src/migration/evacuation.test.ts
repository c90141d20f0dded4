import type { MigrationPhase, VirtualMachineInstanceMigration } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { evacuationBackoffMs } from "./evacuation.ts";

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
    ["the last one succeeded", [migration("2026-01-01T00:59:50Z", "Succeeded"), migration("2026-01-01T00:59:00Z", "Failed")], 0],
    ["one failed 5 s ago: 20 s from its end", [migration("2026-01-01T00:59:55Z", "Failed")], 15_000],
    ["two in a row, the last 5 s ago: 40 s", [migration("2026-01-01T00:59:55Z", "Failed"), migration("2026-01-01T00:59:00Z", "Failed")], 35_000],
    ["ten in a row: at most 5 min", Array.from({ length: 10 }, (_, i) => migration(`2026-01-01T00:59:${String(50 - i).padStart(2, "0")}Z`, "Failed")), 290_000],
    ["one failed long ago", [migration("2026-01-01T00:00:00Z", "Failed")], 0],
  ])("%s", (_, migrations, wait) => {
    expect(evacuationBackoffMs(migrations, now)).toBe(wait);
  });
});
