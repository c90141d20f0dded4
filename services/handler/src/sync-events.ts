import type { EventType, Pod } from "@kubevirt-ts/kube";
import {
  type Condition,
  EventReason,
  Label,
  type MigrationState,
  type VirtualMachineInstance,
  VmiConditionType,
  VmiPhase,
  type VmiDomainAction,
} from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_CONTAINER, isLauncherPodOf } from "@kubevirt-ts/node-contract";
import { isFinalPhase, isHandedOver } from "@kubevirt-ts/vm-rules";

// KubeVirt's SyncEvents, which its handler records on a VMI as its life on
// the node goes on, with KubeVirt's reasons, types and messages: `kubectl
// describe vmi` and the tools (KubeVirt's own tests among them) read them.
// Each is recorded once, on the change that makes it: a change of the VMI
// (its phase, its deletion, a condition, its migration state) as the
// handler's informers deliver it, the end of its launcher pod, or something
// the handler did (defined the domain, turned it off, a domain action).

export interface SyncEvent {
  type: EventType;
  reason: EventReason;
  message: string;
}

/** The longest message an event takes: a launcher's or a migration's failure is cut there. */
export const MAX_EVENT_MESSAGE = 1024;

const event = (type: EventType, reason: EventReason, message: string): SyncEvent => ({
  type,
  reason,
  message: message.length > MAX_EVENT_MESSAGE ? `${message.slice(0, MAX_EVENT_MESSAGE - 1)}…` : message,
});

/** The handler defined the VMI's domain in its launcher. */
export const domainDefined = (): SyncEvent => event("Normal", EventReason.Created, "VirtualMachineInstance defined.");

/** The handler turned the guest off: its stop was overdue, or forced. */
export const domainKilled = (): SyncEvent => event("Normal", EventReason.Deleted, "VirtualMachineInstance stopping");

/** A domain action the launcher carried out. */
export function domainActionEvent(action: VmiDomainAction): SyncEvent {
  switch (action) {
    case "pause":
      return event("Normal", EventReason.Paused, "VirtualMachineInstance paused");
    case "unpause":
      return event("Normal", EventReason.Unpaused, "VirtualMachineInstance unpaused");
    case "reset":
      return event("Normal", EventReason.Reset, "VirtualMachineInstance reset");
    case "softReboot":
      return event("Normal", EventReason.SoftRebooted, "VirtualMachineInstance soft rebooted");
  }
}

const stopped = (crashed: boolean) =>
  crashed
    ? event("Warning", EventReason.Stopped, "The VirtualMachineInstance crashed.")
    : event("Normal", EventReason.Stopped, "The VirtualMachineInstance was shut down.");

const conditionOf = (vmi: VirtualMachineInstance, type: string): Condition | undefined =>
  vmi.status?.conditions?.find((c) => c.type === type);
const isLauncherFailure = (c: Condition | undefined) =>
  c?.status === "False" && (c.reason?.startsWith("Launcher") ?? false);
const sameMigration = (before: MigrationState | undefined, after: MigrationState) =>
  before?.migrationUid === after.migrationUid ? before : undefined;
const migrationFailed = (state: MigrationState) =>
  event(
    "Warning",
    EventReason.Migrated,
    `VirtualMachineInstance migration uid ${state.migrationUid ?? ""} failed. reason:${state.failureReason ?? ""}`,
  );

/** The events of a change to a VMI of this node (its status.nodeName), from the VMI before to the VMI after. */
export function nodeVmiEvents(
  before: VirtualMachineInstance,
  after: VirtualMachineInstance,
  nodeName: string,
): SyncEvent[] {
  if (after.status?.nodeName !== nodeName) return [];
  const events: SyncEvent[] = [];
  const [was, is] = [before.status?.phase, after.status.phase];
  if (was !== is && is === VmiPhase.Running)
    events.push(event("Normal", EventReason.Started, "VirtualMachineInstance started."));
  if (was !== is && isHandedOver(was) && (is === VmiPhase.Succeeded || is === VmiPhase.Failed))
    events.push(stopped(is === VmiPhase.Failed));
  // Deleted: its launcher shuts the guest down, within its grace period (the kill at its end is domainKilled).
  if (
    !before.metadata.deletionTimestamp &&
    after.metadata.deletionTimestamp &&
    isHandedOver(is) &&
    !isFinalPhase(is) &&
    after.spec.terminationGracePeriodSeconds !== 0
  ) {
    events.push(event("Normal", EventReason.ShuttingDown, "Signaled Graceful Shutdown"));
  }
  const failure = conditionOf(after, VmiConditionType.Synchronized);
  const failedBefore = conditionOf(before, VmiConditionType.Synchronized);
  if (isLauncherFailure(failure) && !(isLauncherFailure(failedBefore) && failedBefore?.reason === failure?.reason))
    events.push(event("Warning", EventReason.SyncFailed, failure?.message ?? failure?.reason ?? ""));
  const credentials = conditionOf(after, VmiConditionType.AccessCredentialsSynchronized);
  if (
    credentials &&
    credentials.status !== conditionOf(before, VmiConditionType.AccessCredentialsSynchronized)?.status
  ) {
    events.push(
      credentials.status === "True"
        ? event("Normal", EventReason.AccessCredentialsSyncSuccess, credentials.message ?? "")
        : event("Warning", EventReason.AccessCredentialsSyncFailed, credentials.message ?? ""),
    );
  }
  // The source's half of a migration: it migrates once the target says where it listens.
  const state = after.status.migrationState;
  if (state?.migrationUid && state.sourceNode === nodeName) {
    const previous = sameMigration(before.status?.migrationState, state);
    if (!previous?.targetNodeAddress && state.targetNodeAddress && state.failed !== true && state.completed !== true)
      events.push(event("Normal", EventReason.Migrating, "VirtualMachineInstance is migrating."));
    if (previous?.failed !== true && state.failed === true) events.push(migrationFailed(state));
  }
  return events;
}

/** The events of a change to a VMI migrating to this node (its migration state's targetNode). */
export function migrationTargetEvents(
  before: VirtualMachineInstance,
  after: VirtualMachineInstance,
  nodeName: string,
): SyncEvent[] {
  const state = after.status?.migrationState;
  if (!state?.migrationUid || state.targetNode !== nodeName) return [];
  const previous = sameMigration(before.status?.migrationState, state);
  const events: SyncEvent[] = [];
  if (!previous?.targetNodeAddress && state.targetNodeAddress)
    events.push(event("Normal", EventReason.PreparingTarget, "VirtualMachineInstance Migration Target Prepared."));
  if (previous?.completed !== true && state.completed === true)
    events.push(event("Normal", EventReason.Migrated, `The VirtualMachineInstance migrated to node ${nodeName}.`));
  if (previous?.failed !== true && state.failed === true) events.push(migrationFailed(state));
  return events;
}

const launcherTermination = (pod: Pod) =>
  pod.status?.containerStatuses?.find((c) => c.name === LAUNCHER_CONTAINER)?.state?.terminated;
const launcherEnded = (pod: Pod) =>
  pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed" || launcherTermination(pod) !== undefined;

/**
 * The event of a launcher that ended, or whose pod went away ("deleted") before it was seen to end, while its VMI was
 * being deleted: the guest stopped (a launcher exits cleanly only once its guest has shut off). No writer moves a
 * deleted VMI to a final phase, so this is where KubeVirt's Stopped of a stop is recorded; once, at the first sign.
 * None for a migration's target pod, nor a VMI that ended before.
 */
export function launcherEndEvents(
  vmi: VirtualMachineInstance,
  before: Pod,
  after: Pod | "deleted",
  nodeName: string,
): SyncEvent[] {
  const pod = after === "deleted" ? before : after;
  if (launcherEnded(before) || !(after === "deleted" || launcherEnded(after))) return [];
  const phase = vmi.status?.phase;
  const uid = pod.metadata.uid ?? "";
  if (!vmi.metadata.deletionTimestamp || !isHandedOver(phase) || vmi.status?.nodeName !== nodeName) return [];
  if (
    !isLauncherPodOf(pod, vmi) ||
    vmi.status.activePods?.[uid] !== nodeName ||
    pod.metadata.labels?.[Label.MigrationJobUid] !== undefined
  )
    return [];
  const exit = launcherTermination(pod)?.exitCode;
  return [stopped(pod.status?.phase === "Failed" || (exit !== undefined && exit !== 0))];
}
