import { type Pod, kubeTime } from "@kubevirt-ts/kube";
import {
  MIGRATION_ABORTED_REASON,
  handedOffPhase,
  isFinalMigrationPhase,
  isFinalPhase,
  isMigrating,
  migrationRefusal,
  migrationStateOf,
  withMigrationPhase,
} from "@kubevirt-ts/vm-rules";
import {
  MigrationPhase,
  type MigrationState,
  type MigrationStatus,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
} from "@kubevirt-ts/kubevirt-api";

// What the migration controller should do about one VirtualMachineInstanceMigration, decided from what is observed
// alone: the controller's part of the contract in vm-rules' migration.ts (target pod, hand-over, timeouts,
// cancellation), and the migration's phase, which follows from the target pod and the VMI's migrationState.

export interface MigrationTimeouts {
  /** How long a target pod may be unschedulable (PodScheduled=False, Unschedulable) before the migration fails. */
  unschedulableSeconds: number;
  /** How long a target pod may stay Pending, for any reason, before the migration fails. */
  pendingSeconds: number;
}

export interface MigrationObservation {
  migration: VirtualMachineInstanceMigration;
  /** The VMI it names, from the cache; undefined when there is none. */
  vmi: VirtualMachineInstance | undefined;
  /** The VMI's launcher pod it runs in now (the migration's source). */
  sourcePod: Pod | undefined;
  /** The VMI's launcher pods labelled with this migration's uid. */
  targetPods: readonly Pod[];
  /** undefined when the parallel limits let it start now; else why it waits. */
  held: string | undefined;
  timeouts: MigrationTimeouts;
  now: Date;
}

export interface MigrationDecision {
  status: MigrationStatus;
  createTargetPod?: boolean;
  deleteTargetPods?: Pod[];
  /**
   * The VMI's new migrationState, when it changes; `targetNodeLabel` the node for its migrationTargetNodeName label.
   */
  vmiState?: MigrationState;
  targetNodeLabel?: string;
  /** The migration may go: it is being deleted and nothing moves by it any more. */
  release?: boolean;
  /** Look again then, for a timeout or a limit. */
  requeueAfterMs?: number;
  event?: { type: "Normal" | "Warning"; reason: string; message: string };
}

const podEnded = (pod: Pod) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
const seconds = (from: string | null | undefined, now: Date) =>
  from ? (now.getTime() - new Date(from).getTime()) / 1000 : 0;

/** Why a target pod that is not bound to a node has waited too long, or how long it may still wait (ms). */
function targetPodTimeout(pod: Pod, timeouts: MigrationTimeouts, now: Date): { reason: string } | { waitMs: number } {
  const unschedulable = pod.status?.conditions?.find(
    (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
  );
  const pendingFor = seconds(pod.metadata.creationTimestamp, now);
  if (unschedulable) {
    const unschedulableFor = seconds(unschedulable.lastTransitionTime ?? pod.metadata.creationTimestamp, now);
    if (unschedulableFor >= timeouts.unschedulableSeconds) {
      return {
        reason:
          `the target pod ${pod.metadata.name ?? ""} was unschedulable ` +
          `for ${String(timeouts.unschedulableSeconds)} s: ${unschedulable.message ?? "no node fits it"}`,
      };
    }
  }
  if (pendingFor >= timeouts.pendingSeconds)
    return { reason: `the target pod ${pod.metadata.name ?? ""} was pending for ${String(timeouts.pendingSeconds)} s` };
  const left = Math.min(
    unschedulable
      ? timeouts.unschedulableSeconds - seconds(unschedulable.lastTransitionTime ?? pod.metadata.creationTimestamp, now)
      : Infinity,
    timeouts.pendingSeconds - pendingFor,
  );
  return { waitMs: Math.max(1, Math.ceil(left * 1000)) };
}

export function decideMigration(o: MigrationObservation): MigrationDecision {
  const { migration, vmi, now } = o;
  const time = kubeTime(now);
  const uid = migration.metadata.uid ?? "";
  const previous = migration.status?.phase
    ? migration.status
    : withMigrationPhase(migration.status ?? {}, MigrationPhase.Pending, migration.metadata.creationTimestamp ?? time);
  const state = vmi ? migrationStateOf(vmi, uid) : undefined;
  const handed = handedOffPhase(state);
  const live = o.targetPods.filter((p) => !p.metadata.deletionTimestamp);
  // A target pod is deleted unless the VMI now runs in it.
  const notMoved = handed === MigrationPhase.Succeeded ? [] : live;
  const status = (phase: MigrationPhase): MigrationStatus => ({
    ...withMigrationPhase(previous, phase, time),
    ...(state ? { migrationState: state } : {}),
  });

  /** The migration failed: its target pod goes, and the VMI (when it has no other migration going) says why. */
  const fail = (reason: string): MigrationDecision => {
    const mayWrite =
      vmi !== undefined && !isFinalPhase(vmi.status?.phase) && (state !== undefined || !isMigrating(vmi));
    const failed: MigrationState = {
      ...(state ?? { migrationUid: uid, sourceNode: vmi?.status?.nodeName }),
      failed: true,
      failureReason: reason,
      endTimestamp: time,
    };
    return {
      status: {
        ...withMigrationPhase(previous, MigrationPhase.Failed, time),
        ...(mayWrite ? { migrationState: failed } : {}),
      },
      deleteTargetPods: live,
      ...(mayWrite ? { vmiState: failed } : {}),
      event: {
        type: "Warning",
        reason: "MigrationFailed",
        message: `The migration of VMI ${migration.spec.vmiName} failed: ${reason}`,
      },
    };
  };

  if (migration.metadata.deletionTimestamp) {
    // Handed over and not ended: the source's handler is asked to abort, and the migration waits for its answer.
    if (state && handed !== undefined && !isFinalMigrationPhase(handed)) {
      return {
        status: status(handed),
        ...(state.abortRequested === true ? {} : { vmiState: { ...state, abortRequested: true } }),
      };
    }
    return {
      status: isFinalMigrationPhase(previous.phase)
        ? previous
        : status(handed ?? previous.phase ?? MigrationPhase.Pending),
      deleteTargetPods: notMoved,
      release: notMoved.length === 0,
    };
  }
  if (isFinalMigrationPhase(previous.phase))
    return {
      status: previous,
      ...(previous.phase === MigrationPhase.Failed && live.length > 0 ? { deleteTargetPods: live } : {}),
    };
  if (!vmi) return fail(`VMI ${migration.spec.vmiName} does not exist`);
  if (vmi.metadata.deletionTimestamp || isFinalPhase(vmi.status?.phase))
    return fail(
      `VMI ${migration.spec.vmiName} ` +
        `is ${vmi.metadata.deletionTimestamp ? "being deleted" : (vmi.status?.phase ?? "")}`,
    );

  if (handed !== undefined) {
    if (handed === MigrationPhase.Failed)
      return {
        status: status(handed),
        deleteTargetPods: live,
        event: {
          type: "Warning",
          reason: "MigrationFailed",
          message:
            `The migration of VMI ${migration.spec.vmiName} ` +
            `failed: ${state?.failureReason ?? MIGRATION_ABORTED_REASON}`,
        },
      };
    if (handed === MigrationPhase.Succeeded)
      return {
        status: status(handed),
        event: {
          type: "Normal",
          reason: "Migrated",
          message: `VMI ${migration.spec.vmiName} migrated to node ${state?.targetNode ?? ""}`,
        },
      };
    const target = live.find((p) => p.metadata.name === state?.targetPod);
    if (!target) return fail(`the target pod ${state?.targetPod ?? ""} is gone`);
    if (podEnded(target))
      return fail(
        `the target pod ${target.metadata.name ?? ""} ended ` +
          `(${target.status?.phase ?? ""})${target.status?.message ? `: ${target.status.message}` : ""}`,
      );
    // The target's launcher has not started yet: the catch-all pending timeout still holds.
    if (handed === MigrationPhase.PreparingTarget && target.status?.phase === "Pending") {
      const timeout = targetPodTimeout(target, { ...o.timeouts, unschedulableSeconds: Infinity }, now);
      if ("reason" in timeout) return fail(timeout.reason);
      return { status: status(handed), requeueAfterMs: timeout.waitMs };
    }
    return { status: status(handed) };
  }

  // Not handed over yet: the controller's own phases.
  const target = live[0];
  if (!target) {
    if (previous.phase !== MigrationPhase.Pending) return fail("the target pod is gone before it was scheduled");
    const refusal = migrationRefusal(vmi);
    if (refusal !== undefined) return fail(refusal);
    if (o.held !== undefined) {
      // Said once, when the migration is first seen waiting.
      const event =
        migration.status?.phase === undefined
          ? { event: { type: "Normal" as const, reason: "MigrationBackoff", message: o.held } }
          : {};
      return { status: status(MigrationPhase.Pending), requeueAfterMs: 3_000, ...event };
    }
    return { status: status(MigrationPhase.Scheduling), createTargetPod: true };
  }
  if (podEnded(target))
    return fail(
      `the target pod ${target.metadata.name ?? ""} ended (${target.status?.phase ?? ""}) before the migration began`,
    );
  const node = target.spec?.nodeName;
  if (!node) {
    const timeout = targetPodTimeout(target, o.timeouts, now);
    if ("reason" in timeout) return fail(timeout.reason);
    return { status: status(MigrationPhase.Scheduling), requeueAfterMs: timeout.waitMs };
  }
  // Bound: handed over to the handlers, in one write of the VMI (migration.ts).
  const handoff: MigrationState = {
    migrationUid: uid,
    sourceNode: vmi.status?.nodeName,
    sourcePod: o.sourcePod?.metadata.name,
    targetNode: node,
    targetPod: target.metadata.name,
    startTimestamp: time,
  };
  return {
    status: { ...withMigrationPhase(previous, MigrationPhase.Scheduled, time), migrationState: handoff },
    vmiState: handoff,
    targetNodeLabel: node,
  };
}
