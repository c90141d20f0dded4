import { LAUNCHER_UID, VmiPhase, type VmiStatus } from "@kubevirt-ts/kubevirt-api";

// The phase of a VMI, as one state machine with two owners.
//
// virt-controller owns a VMI from its creation until its launcher pod is
// ready: Pending (no pod yet), Scheduling (the pod exists, not ready yet),
// Scheduled (the pod is ready; the controller writes status.nodeName, the
// pod's node). At Scheduled the VMI is handed over: from then on the handler
// on that node moves the phase, from the state its launcher reports of the
// domain: Running, then Succeeded (the guest shut off) or Failed (it
// crashed). The controller keeps one transition for itself at every phase
// before the end: a VMI whose launcher pod ended, or is gone once it had
// one, is Failed; but a handed-over VMI whose launcher exited cleanly is
// Succeeded, since the launcher exits cleanly only once its guest has shut
// off (it may go before its handler has seen the shut-off, as a guest that
// powers off at once does). Succeeded and Failed are final: nothing leaves them, and
// the VMI's launcher pod is deleted.
//
// The controller's rules are in services/controller/src/vmi/decide.ts, the
// handler's in services/handler/src/status.ts; both are tested against the
// table below. kubevirt-ts never writes Unknown.

export const PhaseOwner = {
  /** virt-controller (services/controller). */
  Controller: "controller",
  /** virt-handler on the VMI's node (services/handler). */
  Handler: "handler",
} as const;
export type PhaseOwner = (typeof PhaseOwner)[keyof typeof PhaseOwner];

export interface PhaseTransition {
  from: VmiPhase;
  to: VmiPhase;
  owner: PhaseOwner;
  /** What makes the owner take it. */
  when: string;
}

const { Pending, Scheduling, Scheduled, Running, Succeeded, Failed } = VmiPhase;
const { Controller, Handler } = PhaseOwner;

/** Every phase change kubevirt-ts makes; a VMI that has no phase yet is Pending. */
export const VMI_PHASE_TRANSITIONS: readonly PhaseTransition[] = Object.freeze([
  { from: Pending, to: Scheduling, owner: Controller, when: "its launcher pod exists and is not ready" },
  { from: Pending, to: Scheduled, owner: Controller, when: "its launcher pod is ready" },
  { from: Scheduling, to: Scheduled, owner: Controller, when: "its launcher pod is ready" },
  ...[Pending, Scheduling, Scheduled, Running].map((from) => ({
    from,
    to: Failed,
    owner: Controller,
    when: "its launcher pod ended, or is gone after it had one",
  })),
  ...[Scheduled, Running].map((from) => ({
    from,
    to: Succeeded,
    owner: Controller,
    when: "its launcher exited cleanly, which it does once its guest has shut off",
  })),
  ...[Scheduled, Running].flatMap((from) => [
    ...(from === Scheduled
      ? [
          {
            from,
            to: Running,
            owner: Handler,
            when: "its domain runs (or is paused, blocked, suspended or shutting down)",
          },
        ]
      : []),
    { from, to: Succeeded, owner: Handler, when: "its domain shut off" },
    { from, to: Failed, owner: Handler, when: "its domain crashed" },
  ]),
]);

/** Succeeded and Failed: the VMI is over and stays so. */
export function isFinalPhase(phase: string | undefined): boolean {
  return phase === Succeeded || phase === Failed;
}

/**
 * Who moves a VMI on from this phase: the controller before Scheduled, the handler from Scheduled to the end, nobody
 * once it is final.
 */
export function phaseOwner(phase: string | undefined): PhaseOwner | undefined {
  switch (phase ?? Pending) {
    case Pending:
    case Scheduling:
      return Controller;
    case Scheduled:
    case Running:
      return Handler;
    default:
      return undefined;
  }
}

/** Whether the VMI is the handler's now (Scheduled or Running). */
export const isHandedOver = (phase: string | undefined): boolean => phaseOwner(phase) === Handler;

/** Whether `owner` may move a VMI from `from` (no phase yet: Pending) to `to`; staying is no transition. */
export function isAllowedTransition(from: VmiPhase | undefined, to: VmiPhase, owner: PhaseOwner): boolean {
  const start = from ?? Pending;
  return VMI_PHASE_TRANSITIONS.some((t) => t.from === start && t.to === to && t.owner === owner);
}

/**
 * The status in the given phase: when the phase changes, the time of the
 * change is added to status.phaseTransitionTimestamps (`time` is an RFC 3339
 * time in seconds, as Kubernetes writes them).
 */
export function withPhase(status: VmiStatus, phase: VmiPhase, time: string): VmiStatus {
  if (status.phase === phase) return withAlwaysSerialized({ ...status, phase });
  return withAlwaysSerialized({
    ...status,
    phase,
    phaseTransitionTimestamps: [...(status.phaseTransitionTimestamps ?? []), { phase, phaseTransitionTimestamp: time }],
  });
}

/**
 * The status with the fields KubeVirt's Go types always write, which clients read unguarded: guestOSInfo, a struct
 * value (so {} without a guest agent), and runtimeUser, an integer without omitempty (the launcher's user). Every
 * writer of a VMI's status goes through withPhase, and so through this. (A VM's and a migration's status have no
 * such field: KubeVirt leaves out every empty one.)
 */
function withAlwaysSerialized(status: VmiStatus): VmiStatus {
  return { ...status, guestOSInfo: status.guestOSInfo ?? {}, runtimeUser: status.runtimeUser ?? LAUNCHER_UID };
}
