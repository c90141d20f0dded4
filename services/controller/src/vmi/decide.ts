import { type Pod, kubeTime, removeCondition, setCondition } from "@kubevirt-ts/kube";
import {
  type ClaimObject,
  type DataVolumesState,
  backendStorageClaimName,
  claimsProblem,
  isFinalPhase,
  isHandedOver,
  liveMigratability,
  volumeStatuses,
  withPhase,
} from "@kubevirt-ts/vm-rules";
import {
  type Condition,
  type VirtualMachineInstance,
  VmiConditionType,
  VmiPhase,
  type VmiStatus,
} from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_CONTAINER } from "@kubevirt-ts/node-contract";
import { launcherDeletionGrace, secretsWaitMessage } from "./pod.ts";

// What a VMI's controller should do about its launcher pod, and the VMI
// status that follows from the pod, decided from what is observed alone.
// The controller's part of the VMI phase state machine (vm-rules'
// vmi-phase.ts): the phases up to Scheduled; from there the handler on the
// VMI's node moves the phase, and the controller only notices the pod's end.

export type VmiAction = { kind: "none" } | { kind: "createPod" } | { kind: "deletePods"; pods: Pod[] };

export interface VmiObservation {
  vmi: VirtualMachineInstance;
  /**
   * The VMI's launcher pods, oldest first: the ones it runs or starts in, not its migrations' targets
   * (launcherPodRoles).
   */
  pods: readonly Pod[];
  /** The pods a completed migration left behind, to be deleted (launcherPodRoles). */
  left?: readonly Pod[];
  /** Why the spec cannot run, when validation refused it. */
  invalid: string | undefined;
  /** The claims the VMI's volumes name that exist in its namespace, by name. */
  claims: ReadonlyMap<string, ClaimObject>;
  /** Whether the DataVolumes the VMI's volumes name have filled their claims; undefined when it names none. */
  dataVolumes?: DataVolumesState | undefined;
  now: Date;
}

const podFinished = (pod: Pod) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
/**
 * The launcher's container runs: the VMI goes to its node, whose handler waits for the launcher's socket. Its readiness
 * is the guest's, when the VMI has a readiness probe.
 */
const launcherStarted = (pod: Pod) =>
  pod.status?.phase === "Running" &&
  pod.status.containerStatuses?.find((c) => c.name === LAUNCHER_CONTAINER)?.started === true;

export function decideVmi(o: VmiObservation): VmiAction {
  const { vmi, pods } = o;
  const live = pods.filter((p) => !p.metadata.deletionTimestamp);
  if (vmi.metadata.deletionTimestamp || isFinalPhase(vmi.status?.phase)) {
    // A pod already going, with more time than the VMI now gives it (a forced stop after a stop), is deleted again,
    // sooner.
    const hurried = pods.filter((p) => p.metadata.deletionTimestamp && launcherDeletionGrace(vmi, p) !== undefined);
    const going = [...live, ...hurried];
    return going.length > 0 ? { kind: "deletePods", pods: going } : { kind: "none" };
  }
  // The source pod a completed migration left: the VMI runs on in the target pod.
  if (o.left && o.left.length > 0) return { kind: "deletePods", pods: [...o.left] };
  // One launcher per VMI: should a second ever appear, the newer ones go.
  if (live.length > 1) return { kind: "deletePods", pods: live.slice(1) };
  // A DataVolume still filling its claim, or a claim that is not there yet (or cannot be attached), holds the pod back,
  // as KubeVirt's does: its pod could not start, or would start on a half-written disk.
  const ready = o.invalid === undefined && o.dataVolumes?.ready !== false && claimsProblem(vmi, o.claims) === undefined;
  if (pods.length === 0 && (vmi.status?.phase ?? VmiPhase.Pending) === VmiPhase.Pending && ready)
    return { kind: "createPod" };
  return { kind: "none" };
}

function nextPhase(o: VmiObservation, pod: Pod | undefined): { phase: VmiPhase; reason?: string; message?: string } {
  const phase = o.vmi.status?.phase ?? VmiPhase.Pending;
  if (isFinalPhase(phase)) return { phase };
  if (!pod) {
    if (phase === VmiPhase.Pending) return { phase };
    return { phase: VmiPhase.Failed, reason: "LauncherPodGone", message: "The virt-launcher pod of the VMI is gone." };
  }
  if (podFinished(pod)) {
    // The launcher exits cleanly only once its guest has shut off (a crash or a failed liveness probe fails its pod).
    if (pod.status?.phase === "Succeeded" && isHandedOver(phase)) return { phase: VmiPhase.Succeeded };
    const terminated = pod.status?.containerStatuses?.find((c) => c.state?.terminated)?.state?.terminated;
    // The launcher's own word on its end (a failed liveness probe) is the clearest; then the kubelet's.
    const detail = (pod.status?.message ?? terminated?.message?.trim() ?? terminated?.reason ?? "").replace(/\.+$/, "");
    return {
      phase: VmiPhase.Failed,
      reason: "LauncherPodFailed",
      message: `The virt-launcher pod ended (${pod.status?.phase ?? ""})${detail ? `: ${detail}` : ""}.`,
    };
  }
  if (isHandedOver(phase)) return { phase };
  return launcherStarted(pod) ? { phase: VmiPhase.Scheduled } : { phase: VmiPhase.Scheduling };
}

function podConditions(conditions: Condition[], pod: Pod | undefined, now: Date): Condition[] {
  let list = conditions;
  const scheduled = pod?.status?.conditions?.find((c) => c.type === "PodScheduled");
  list =
    scheduled?.status === "False"
      ? setCondition<Condition>(
          list,
          {
            type: VmiConditionType.PodScheduled,
            status: "False",
            reason: scheduled.reason ?? "Unschedulable",
            message: scheduled.message ?? "",
          },
          now,
        )
      : removeCondition(list, VmiConditionType.PodScheduled);
  const waiting = [...(pod?.status?.containerStatuses ?? []), ...(pod?.status?.initContainerStatuses ?? [])]
    .map((c) => c.state?.waiting)
    .find((w) => w?.reason === "ErrImagePull" || w?.reason === "ImagePullBackOff");
  if (waiting)
    return setCondition<Condition>(
      list,
      {
        type: VmiConditionType.Synchronized,
        status: "False",
        reason: waiting.reason ?? "ErrImagePull",
        message: waiting.message ?? "",
      },
      now,
    );
  const secrets = pod && secretsWaitMessage(pod);
  return secrets
    ? setCondition<Condition>(
        list,
        { type: VmiConditionType.Synchronized, status: "False", reason: "LauncherPodWaiting", message: secrets },
        now,
      )
    : list;
}

/** The image of a launcher pod's compute container: what the VMI runs in. */
export const launcherImageOf = (pod: Pod | undefined): string | undefined =>
  pod?.spec?.containers.find((c) => c.name === LAUNCHER_CONTAINER)?.image;

/**
 * Whether a VMI runs in another launcher image than the installed one (KubeVirt's outdatedLauncherImage label), by
 * the image its status reports: unknown (not running yet) is not outdated.
 */
export const isOutdatedLauncher = (status: VmiStatus | undefined, launcherImage: string): boolean =>
  !isFinalPhase(status?.phase) &&
  status?.launcherContainerImageVersion !== undefined &&
  status.launcherContainerImageVersion !== launcherImage;

/** The VMI's status after this look at its pod. */
export function deriveVmiStatus(o: VmiObservation): VmiStatus {
  const { vmi, now } = o;
  const pod = o.pods.find((p) => !p.metadata.deletionTimestamp) ?? o.pods[0];
  // Pending since its creation: virt-api's webhook says so on create, as KubeVirt's does; a VMI that came without it
  // still has it.
  const previous = vmi.status?.phase
    ? vmi.status
    : withPhase(vmi.status ?? {}, VmiPhase.Pending, vmi.metadata.creationTimestamp ?? kubeTime(now));
  const { phase, reason, message } = nextPhase(o, pod);
  const status = withPhase(previous, phase, kubeTime(now));
  if (phase !== previous.phase) {
    if (reason) status.reason = reason;
    if (message) status.message = message;
  }
  if (phase === VmiPhase.Scheduled && !isHandedOver(previous.phase) && pod?.spec?.nodeName)
    status.nodeName = pod.spec.nodeName;
  // A completed migration moves the VMI to its target's node (migration.ts): the target's handler owns it from then on.
  const moved = previous.migrationState;
  if (moved?.completed === true && moved.targetNode && isHandedOver(phase) && status.nodeName !== moved.targetNode) {
    status.nodeName = moved.targetNode;
    if (status.evacuationNodeName === moved.sourceNode) delete status.evacuationNodeName;
  }
  // The pods are named from the hand-over on (the handler trusts only the pod named here), not while the pod
  // starts: its node alone is no news to anyone, and a write for it would be one more write per VMI.
  if (phase !== VmiPhase.Pending && phase !== VmiPhase.Scheduling) {
    const activePods = Object.fromEntries(
      o.pods
        .filter((p) => p.spec?.nodeName && p.metadata.uid)
        .map((p) => [p.metadata.uid ?? "", p.spec?.nodeName ?? ""]),
    );
    if (Object.keys(activePods).length > 0) status.activePods = activePods;
    else delete status.activePods;
  }

  // Until the VMI is handed over, Synchronized says what the controller saw; from then on the handler
  // owns it (a launcher that failed), and the controller leaves it to the handler until the VMI ends.
  let conditions =
    isHandedOver(previous.phase) && !isFinalPhase(phase)
      ? (previous.conditions ?? [])
      : removeCondition(previous.conditions ?? [], VmiConditionType.Synchronized);
  if (o.invalid !== undefined) {
    conditions = setCondition<Condition>(
      conditions,
      { type: VmiConditionType.Synchronized, status: "False", reason: "InvalidSpec", message: o.invalid },
      now,
    );
  } else if (!isFinalPhase(phase)) {
    conditions = podConditions(conditions, pod, now);
    const dvs = o.dataVolumes;
    conditions = dvs
      ? setCondition<Condition>(
          conditions,
          {
            type: VmiConditionType.DataVolumesReady,
            status: dvs.ready ? "True" : "False",
            reason: dvs.reason,
            message: dvs.message,
          },
          now,
        )
      : removeCondition(conditions, VmiConditionType.DataVolumesReady);
    const migratable = liveMigratability(vmi.spec, o.claims, backendStorageClaimName(vmi));
    conditions = setCondition<Condition>(
      conditions,
      {
        type: VmiConditionType.LiveMigratable,
        status: migratable.status,
        ...(migratable.reason ? { reason: migratable.reason, message: migratable.message } : {}),
      },
      now,
    );
    status.migrationMethod = migratable.method;
    // A DataVolume's claim is its business until the DataVolume is ready.
    const problem = pod || dvs?.ready === false ? undefined : claimsProblem(vmi, o.claims);
    if (problem)
      conditions = setCondition<Condition>(
        conditions,
        { type: VmiConditionType.Synchronized, status: "False", ...problem },
        now,
      );
  }
  if (isFinalPhase(phase)) {
    conditions = setCondition<Condition>(
      removeCondition(removeCondition(conditions, VmiConditionType.PodScheduled), VmiConditionType.LiveMigratable),
      { type: VmiConditionType.Ready, status: "False", reason: "VMIFinished", message: `The VMI is ${phase}.` },
      now,
    );
  }
  status.conditions = conditions;
  if (status.conditions.length === 0) delete status.conditions;
  // The image the VMI runs in, once it runs, as KubeVirt's launcherContainerImageVersion; a migration's target pod
  // becomes the VMI's pod when it completed, and its image with it.
  const image = launcherImageOf(pod);
  if (isFinalPhase(phase)) delete status.launcherContainerImageVersion;
  else if (phase === VmiPhase.Running && image !== undefined && !pod?.metadata.deletionTimestamp)
    status.launcherContainerImageVersion = image;
  // Each volume, with what the launcher needs of its claim: reported before the launcher starts, as KubeVirt's
  // controller does.
  if (!isFinalPhase(phase) && (vmi.spec.volumes ?? []).length > 0)
    status.volumeStatus = volumeStatuses(vmi.spec, o.claims, previous.volumeStatus);
  return status;
}
