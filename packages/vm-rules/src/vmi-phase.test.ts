import { describe, expect, it } from "vitest";
import { VmiPhase } from "@kubevirt-ts/kubevirt-api";
import {
  PhaseOwner,
  VMI_PHASE_TRANSITIONS,
  isAllowedTransition,
  isFinalPhase,
  isHandedOver,
  phaseOwner,
  withPhase,
} from "./vmi-phase.ts";

const { Controller, Handler } = PhaseOwner;

describe("the VMI phase state machine", () => {
  // The whole machine, as from → to → owner: a change here is a change of behaviour.
  it("has exactly these transitions, each with its owner", () => {
    expect(VMI_PHASE_TRANSITIONS.map((t) => `${t.from} → ${t.to}: ${t.owner}`)).toEqual([
      "Pending → Scheduling: controller",
      "Pending → Scheduled: controller",
      "Scheduling → Scheduled: controller",
      "Pending → Failed: controller",
      "Scheduling → Failed: controller",
      "Scheduled → Failed: controller",
      "Running → Failed: controller",
      "Scheduled → Succeeded: controller",
      "Running → Succeeded: controller",
      "Scheduled → Running: handler",
      "Scheduled → Succeeded: handler",
      "Scheduled → Failed: handler",
      "Running → Succeeded: handler",
      "Running → Failed: handler",
    ]);
  });

  it.each([
    [undefined, Controller, false, false],
    [VmiPhase.Pending, Controller, false, false],
    [VmiPhase.Scheduling, Controller, false, false],
    [VmiPhase.Scheduled, Handler, true, false],
    [VmiPhase.Running, Handler, true, false],
    [VmiPhase.Succeeded, undefined, false, true],
    [VmiPhase.Failed, undefined, false, true],
    [VmiPhase.Unknown, undefined, false, false],
  ])("%s is moved on by %s (handed over: %s, final: %s)", (phase, owner, handedOver, final) => {
    expect(phaseOwner(phase)).toBe(owner);
    expect(isHandedOver(phase)).toBe(handedOver);
    expect(isFinalPhase(phase)).toBe(final);
  });

  it(
    "moves a phase only by its owner, except the controller's end of a VMI by its " +
      "pod's, and never out of a final phase",
    () => {
      for (const t of VMI_PHASE_TRANSITIONS) {
        expect(isFinalPhase(t.from)).toBe(false);
        if (!isFinalPhase(t.to) || t.owner === Handler) expect(phaseOwner(t.from)).toBe(t.owner);
      }
      for (const to of Object.values(VmiPhase)) {
        for (const owner of [Controller, Handler]) {
          expect(isAllowedTransition(VmiPhase.Succeeded, to, owner)).toBe(false);
          expect(isAllowedTransition(VmiPhase.Failed, to, owner)).toBe(false);
        }
      }
    },
  );

  it.each([
    [undefined, VmiPhase.Scheduled, Controller, true],
    [VmiPhase.Pending, VmiPhase.Running, Controller, false],
    [VmiPhase.Pending, VmiPhase.Running, Handler, false],
    [VmiPhase.Scheduled, VmiPhase.Running, Controller, false],
    [VmiPhase.Scheduled, VmiPhase.Running, Handler, true],
    [VmiPhase.Running, VmiPhase.Scheduled, Handler, false],
    [VmiPhase.Running, VmiPhase.Failed, Controller, true],
    [VmiPhase.Running, VmiPhase.Succeeded, Controller, true],
    [VmiPhase.Scheduling, VmiPhase.Succeeded, Controller, false],
  ] as const)("%s → %s by the %s: %s", (from, to, owner, allowed) => {
    expect(isAllowedTransition(from, to, owner)).toBe(allowed);
  });
});

describe("withPhase", () => {
  const stamped = {
    phase: VmiPhase.Scheduled,
    phaseTransitionTimestamps: [{ phase: VmiPhase.Scheduled, phaseTransitionTimestamp: "2026-01-01T00:00:00Z" }],
  };

  const alwaysSerialized = { guestOSInfo: {}, runtimeUser: 107 };

  it("records the time of a change of phase", () => {
    expect(withPhase(stamped, VmiPhase.Running, "2026-01-01T00:00:07Z")).toEqual({
      ...alwaysSerialized,
      phase: VmiPhase.Running,
      phaseTransitionTimestamps: [
        ...stamped.phaseTransitionTimestamps,
        { phase: VmiPhase.Running, phaseTransitionTimestamp: "2026-01-01T00:00:07Z" },
      ],
    });
  });

  it("records nothing when the phase stays, and gives the first phase its time", () => {
    expect(withPhase(stamped, VmiPhase.Scheduled, "2026-01-01T00:00:07Z")).toEqual({ ...alwaysSerialized, ...stamped });
    expect(withPhase({}, VmiPhase.Pending, "2026-01-01T00:00:07Z").phaseTransitionTimestamps).toEqual([
      { phase: VmiPhase.Pending, phaseTransitionTimestamp: "2026-01-01T00:00:07Z" },
    ]);
  });

  it(
    "writes what KubeVirt's Go types always write: guestOSInfo ({} without an " +
      "agent) and runtimeUser, keeping what is known",
    () => {
      const json = JSON.parse(JSON.stringify(withPhase({}, VmiPhase.Pending, "2026-01-01T00:00:07Z"))) as Record<
        string,
        unknown
      >;
      expect(json).toMatchObject({ guestOSInfo: {}, runtimeUser: 107 });
      const known = { ...stamped, guestOSInfo: { id: "debian" }, runtimeUser: 0 };
      expect(withPhase(known, VmiPhase.Running, "2026-01-01T00:00:07Z")).toMatchObject({
        guestOSInfo: { id: "debian" },
        runtimeUser: 0,
      });
    },
  );

  it("leaves the status it was given as it was", () => {
    const before = structuredClone(stamped);
    withPhase(stamped, VmiPhase.Running, "2026-01-01T00:00:07Z");
    expect(stamped).toEqual(before);
  });
});
