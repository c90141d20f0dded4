import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { newTransitions } from "./phase-metrics.ts";

const vmi = (transitions: [string, string][]) =>
  ({
    metadata: { name: "web", creationTimestamp: "2026-01-01T00:00:00Z" },
    status: { phaseTransitionTimestamps: transitions.map(([phase, at]) => ({ phase, phaseTransitionTimestamp: at })) },
  }) as unknown as VirtualMachineInstance;

describe("newTransitions", () => {
  it("counts each phase once, when an update brings it, as seconds since the VMI's creation", () => {
    const pending = vmi([["Pending", "2026-01-01T00:00:01Z"]]);
    const running = vmi([
      ["Pending", "2026-01-01T00:00:01Z"],
      ["Scheduled", "2026-01-01T00:00:03Z"],
      ["Running", "2026-01-01T00:00:05Z"],
    ]);
    expect(newTransitions(pending, running)).toEqual([
      { phase: "Scheduled", seconds: 3 },
      { phase: "Running", seconds: 5 },
    ]);
    expect(newTransitions(running, running)).toEqual([]);
    expect(newTransitions(undefined, pending)).toEqual([{ phase: "Pending", seconds: 1 }]);
  });
});
