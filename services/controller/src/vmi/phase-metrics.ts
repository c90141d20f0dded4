import type { Informer } from "@kubevirt-ts/kube";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { Histogram, type Registry } from "prom-client";

// KubeVirt's kubevirt_vmi_phase_transition_time_from_creation_seconds: for
// each phase a VMI reaches, how long after its creation it got there, from
// the phase transition timestamps its status records. A transition counts
// when an update brings it, so the VMIs listed when the controller starts
// (their transitions counted by an earlier process) are not counted again.

/** KubeVirt's buckets for phase transition times, in seconds. */
export const PHASE_TRANSITION_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 40, 50, 60, 90, 120, 180, 240, 300, 360, 480, 600];

/** The transitions `current` records that `previous` did not: phase and seconds since the VMI's creation. */
export function newTransitions(
  previous: VirtualMachineInstance | undefined,
  current: VirtualMachineInstance,
): { phase: string; seconds: number }[] {
  const created = Date.parse(current.metadata.creationTimestamp ?? "");
  if (Number.isNaN(created)) return [];
  const seen = new Set(
    (previous?.status?.phaseTransitionTimestamps ?? []).map((t) => `${t.phase}@${t.phaseTransitionTimestamp}`),
  );
  return (current.status?.phaseTransitionTimestamps ?? [])
    .filter((t) => !seen.has(`${t.phase}@${t.phaseTransitionTimestamp}`))
    .map((t) => ({ phase: t.phase, seconds: Math.max(0, (Date.parse(t.phaseTransitionTimestamp) - created) / 1000) }))
    .filter((t) => Number.isFinite(t.seconds));
}

export function observePhaseTransitions(vmis: Informer<VirtualMachineInstance>, registry: Registry): void {
  const histogram = new Histogram({
    name: "kubevirt_vmi_phase_transition_time_from_creation_seconds",
    help: "Histogram of VM phase transitions duration from creation time in seconds.",
    labelNames: ["phase"],
    buckets: PHASE_TRANSITION_BUCKETS,
    registers: [registry],
  });
  vmis.addHandler({
    update(previous, current) {
      for (const { phase, seconds } of newTransitions(previous, current)) histogram.observe({ phase }, seconds);
    },
  });
}
