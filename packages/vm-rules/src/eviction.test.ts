import { describe, expect, it } from "vitest";
import type { EvictionStrategy } from "@kubevirt-ts/kubevirt-api";
import { evictionDecision, needsDisruptionBudget } from "./eviction.ts";

const vmi = (evictionStrategy?: EvictionStrategy, migratable?: boolean) => ({
  metadata: { name: "web", namespace: "ns" },
  spec: { domain: { devices: {} }, ...(evictionStrategy ? { evictionStrategy } : {}) },
  ...(migratable === undefined
    ? {}
    : {
        status: {
          conditions: [
            {
              type: "LiveMigratable",
              status: migratable ? ("True" as const) : ("False" as const),
              reason: "DisksNotLiveMigratable",
              message: "PVC data is not shared",
            },
          ],
        },
      }),
});

describe("an eviction of a launcher pod, as KubeVirt decides it for a VMI that cannot be migrated", () => {
  it.each([
    ["None", { allow: true, evacuate: false }, false],
    ["LiveMigrateIfPossible", { allow: true, evacuate: false }, false],
    ["External", { allow: true, evacuate: true }, true],
  ] as const)("%s: %j, with a disruption budget: %s", (strategy, decision, budget) => {
    expect(evictionDecision(vmi(strategy, false), "None")).toEqual(decision);
    expect(needsDisruptionBudget(vmi(strategy, false), "None")).toBe(budget);
  });

  it("LiveMigrate: refused, saying why and what to do, and protected by a disruption budget", () => {
    const decision = evictionDecision(vmi("LiveMigrate", false), "None");
    expect(decision).toMatchObject({
      allow: false,
      evacuate: false,
      message: expect.stringMatching(
        /^VMI web has evictionStrategy LiveMigrate, .*cannot be live migrated \(PVC data is not shared.*virtctl stop/,
      ) as unknown,
    });
    expect(needsDisruptionBudget(vmi("LiveMigrate", false), "None")).toBe(true);
  });

  it("takes the cluster's strategy when the VMI names none", () => {
    expect(evictionDecision(vmi(), "LiveMigrate").allow).toBe(false);
    expect(evictionDecision(vmi(), "None").allow).toBe(true);
    expect(evictionDecision(vmi("None"), "LiveMigrate").allow).toBe(true);
  });
});

describe("an eviction of the launcher pod of a VMI that can be migrated", () => {
  it.each(["LiveMigrate", "LiveMigrateIfPossible"] as const)(
    "%s: marks the VMI for evacuation and refuses with 429 until it moved; a budget protects it",
    (strategy) => {
      expect(evictionDecision(vmi(strategy, true), "None")).toEqual({
        allow: false,
        evacuate: true,
        message:
          "Eviction triggered evacuation of VMI ns/web: it is migrated to another " +
          "node, after which its launcher pod goes",
      });
      expect(needsDisruptionBudget(vmi(strategy, true), "None")).toBe(true);
    },
  );

  it.each([
    ["None", { allow: true, evacuate: false }],
    ["External", { allow: true, evacuate: true }],
  ] as const)("%s: as for one that cannot", (strategy, decision) => {
    expect(evictionDecision(vmi(strategy, true), "None")).toEqual(decision);
  });
});
