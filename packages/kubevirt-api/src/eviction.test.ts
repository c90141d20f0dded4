import { describe, expect, it } from "vitest";
import type { EvictionStrategy } from "./constants.ts";
import { evictionDecision, needsDisruptionBudget } from "./eviction.ts";

const vmi = (evictionStrategy?: EvictionStrategy) => ({ metadata: { name: "web" }, spec: { domain: { devices: {} }, ...(evictionStrategy ? { evictionStrategy } : {}) } });

describe("an eviction of a launcher pod, as KubeVirt decides it for a VMI that cannot be migrated", () => {
  it.each([
    ["None", { allow: true, evacuate: false }, false],
    ["LiveMigrateIfPossible", { allow: true, evacuate: false }, false],
    ["External", { allow: true, evacuate: true }, true],
  ] as const)("%s: %j, with a disruption budget: %s", (strategy, decision, budget) => {
    expect(evictionDecision(vmi(strategy), "None")).toEqual(decision);
    expect(needsDisruptionBudget(vmi(strategy), "None")).toBe(budget);
  });

  it("LiveMigrate: refused, saying why and what to do, and protected by a disruption budget", () => {
    const decision = evictionDecision(vmi("LiveMigrate"), "None");
    expect(decision).toMatchObject({ allow: false, message: expect.stringMatching(/^VMI web has evictionStrategy LiveMigrate, but it cannot be live migrated .*\(virtctl stop\)/) as unknown });
    expect(needsDisruptionBudget(vmi("LiveMigrate"), "None")).toBe(true);
  });

  it("takes the cluster's strategy when the VMI names none", () => {
    expect(evictionDecision(vmi(), "LiveMigrate").allow).toBe(false);
    expect(evictionDecision(vmi(), "None").allow).toBe(true);
    expect(evictionDecision(vmi("None"), "LiveMigrate").allow).toBe(true);
  });
});
