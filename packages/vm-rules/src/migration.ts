import {
  API_VERSION,
  ConditionStatus,
  Kind,
  Label,
  MigrationPhase,
  VmiConditionType,
  VmiPhase,
  podNetworkInterface,
  type MigrationState,
  type MigrationStatus,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  type VmiSpec,
} from "@kubevirt-ts/kubevirt-api";
import { type ClaimObject, claimVolumes } from "./claims.ts";
import { hasPersistentEfi, hasPersistentTpm } from "./backend-storage.ts";

// Live migration: the one place its rules and the contract between its
// three actors are written down (ADR 19).
//
// A VirtualMachineInstanceMigration (VMIM) names a VMI. Its phases, and who
// moves the VMI's status.migrationState (the VMIM's phase is always the
// controller's, derived from what follows):
//
//   Pending          the controller has made no target pod yet (the parallel
//                    limits may hold it here).
//   Scheduling       the controller made the target pod: a launcher pod of
//                    the VMI (controlled by it) labelled
//                    kubevirt.io/migrationJobUID=<VMIM uid>, with a required
//                    anti-affinity to the VMI's other pods by
//                    kubernetes.io/hostname and the VMIM's addedNodeSelector.
//   Scheduled        the target pod is bound to a node. The controller hands
//                    the migration over in one write of the VMI: the label
//                    kubevirt.io/migrationTargetNodeName=<target node> and
//                    status.migrationState = { migrationUid, sourceNode,
//                    sourcePod, targetNode, targetPod, startTimestamp }
//                    (any earlier migration's state is replaced).
//   PreparingTarget  the hand-over is in the VMI. The TARGET node's handler
//                    (it watches VMIs labelled with its node as target)
//                    finds the target pod by status.migrationState.targetPod
//                    and the label above, has its launcher wait for the
//                    guest, then writes targetNodeAddress (and
//                    targetDirectMigrationNodePorts).
//   TargetReady      targetNodeAddress is set. The SOURCE node's handler
//                    (status.nodeName's) starts the migration and writes
//                    mode (PreCopy, later PostCopy).
//   Running          mode is set.
//   Succeeded        the source's handler saw the guest leave for the target
//                    and wrote completed: true and endTimestamp (before its
//                    launcher exits: a source pod that ends first ends the
//                    VMI, as any launcher pod's end does). The target's
//                    handler may write targetNodeDomainDetected and
//                    targetNodeDomainReadyTimestamp. The controller then moves
//                    the VMI to the target: status.nodeName, the
//                    kubevirt.io/nodeName label and status.activePods name the
//                    target, the migrationTargetNodeName label and an
//                    evacuationNodeName of the source node go, and the source
//                    pod is deleted; from then on the target's handler owns
//                    the VMI as any other on its node.
//   Failed           either handler wrote failed: true, failureReason and
//                    endTimestamp; or the controller did, when the target pod
//                    could not be scheduled in time, ended or disappeared.
//                    The controller deletes the target pod; the VMI runs on
//                    where it was.
//
// Cancelling: deleting a VMIM. The controller's finalizer holds it. Before the
// hand-over the controller deletes the target pod and lets the VMIM go. After
// it, and until completed or failed, the controller writes
// migrationState.abortRequested: true; the source's handler aborts and
// writes abortStatus (Aborting, then Succeeded: failed: true with the
// failureReason "Migration aborted", endTimestamp; or Failed: the migration
// went on and ended on its own). Once completed or failed, the controller
// deletes a target pod that is not the VMI's and lets the VMIM go.
//
// The handlers' writes are of the VMI (it has no status subresource): the
// chart's handler node restriction admits the source's handler, whose node
// is status.nodeName; the target's handler's writes need it to admit the
// handler of migrationState.targetNode too (ADR 19), which comes with the
// handlers' half.

export const MIGRATION_SUBRESOURCE = "migrate";

/**
 * KubeVirt's timeouts for a target pod: unschedulable (PodScheduled=False, Unschedulable), and pending for any reason.
 */
export const DEFAULT_UNSCHEDULABLE_TARGET_TIMEOUT_SECONDS = 5 * 60;
export const DEFAULT_PENDING_TARGET_TIMEOUT_SECONDS = 15 * 60;

/**
 * generateName of the migrations virtctl migrate (the migrate subresource) and a node's evacuation make, as KubeVirt's.
 */
export const MIGRATE_VM_GENERATE_NAME = "kubevirt-migrate-vm-";
export const EVACUATION_GENERATE_NAME = "kubevirt-evacuation-";
/** The name prefix of the migrations that move VMIs onto the installed launcher after an upgrade (KubeVirt's). */
export const WORKLOAD_UPDATE_GENERATE_NAME = "kubevirt-workload-update-";

/**
 * A migration of the VMI as its makers name it (virtctl migrate, a node's evacuation, the workload updater): a
 * generated name with their prefix, KubeVirt's kubevirt.io/vmi-name label (which virtctl migrate-cancel selects), and
 * their annotations.
 */
export function newMigration(
  namespace: string,
  vmiName: string,
  generateName: string,
  extra: { annotations?: Record<string, string>; spec?: Partial<VirtualMachineInstanceMigration["spec"]> } = {},
): VirtualMachineInstanceMigration {
  return {
    apiVersion: API_VERSION,
    kind: Kind.VirtualMachineInstanceMigration,
    metadata: {
      generateName,
      namespace,
      labels: { [Label.MigrationVmiName]: vmiName },
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: { ...extra.spec, vmiName },
  };
}

/** The failureReason the source's handler writes when it aborted a migration on request. */
export const MIGRATION_ABORTED_REASON = "Migration aborted";

export const isFinalMigrationPhase = (phase: string | undefined): boolean =>
  phase === MigrationPhase.Succeeded || phase === MigrationPhase.Failed;

/** Whether the migration has handed over to the handlers: past Scheduled. */
export function isHandedOff(phase: string | undefined): boolean {
  return (
    phase !== undefined &&
    phase !== MigrationPhase.Pending &&
    phase !== MigrationPhase.Scheduling &&
    phase !== MigrationPhase.Scheduled
  );
}

/**
 * The status in the given phase, its time added to phaseTransitionTimestamps when it changes (as withPhase for VMIs).
 */
export function withMigrationPhase(status: MigrationStatus, phase: MigrationPhase, time: string): MigrationStatus {
  if (status.phase === phase) return status;
  return {
    ...status,
    phase,
    phaseTransitionTimestamps: [...(status.phaseTransitionTimestamps ?? []), { phase, phaseTransitionTimestamp: time }],
  };
}

/** The VMI's migration state, when it is that of this migration. */
export function migrationStateOf(
  vmi: Pick<VirtualMachineInstance, "status">,
  migrationUid: string | undefined,
): MigrationState | undefined {
  const state = vmi.status?.migrationState;
  return migrationUid !== undefined && state?.migrationUid === migrationUid ? state : undefined;
}

/**
 * Whether the VMI is moving: a migration state that has ended neither way, or completed before the VMI is on its
 * target's node.
 */
export function isMigrating(vmi: Pick<VirtualMachineInstance, "status">): boolean {
  const state = vmi.status?.migrationState;
  if (state?.migrationUid === undefined || state.failed === true) return false;
  return state.completed !== true || (state.targetNode !== undefined && vmi.status?.nodeName !== state.targetNode);
}

/** The phase a handed-over migration is in by the VMI's migration state (undefined: not handed over yet). */
export function handedOffPhase(state: MigrationState | undefined): MigrationPhase | undefined {
  if (!state?.targetNode) return undefined;
  if (state.completed === true) return MigrationPhase.Succeeded;
  if (state.failed === true) return MigrationPhase.Failed;
  if (state.mode !== undefined) return MigrationPhase.Running;
  if (state.targetNodeAddress) return MigrationPhase.TargetReady;
  return MigrationPhase.PreparingTarget;
}

// Whether a VMI can be live migrated: KubeVirt's LiveMigratable condition, by
// its reasons, for the features kubevirt-ts has.

export const LiveMigratableReason = {
  /** A claim the target pod could not mount on another node while the source's holds it (not ReadWriteMany). */
  DisksNotLiveMigratable: "DisksNotLiveMigratable",
  /** An interface the guest could not keep on another pod's address: bridge on the pod network. */
  InterfaceNotLiveMigratable: "InterfaceNotLiveMigratable",
} as const;

export interface LiveMigratability {
  status: ConditionStatus;
  reason?: string;
  message?: string;
  /** How it would move: LiveMigration when every disk is shared, BlockMigration when local disks are copied along. */
  method: "LiveMigration" | "BlockMigration";
}

const shared = (claim: ClaimObject | undefined, readOnly: boolean) =>
  (claim?.spec?.accessModes ?? []).some((m) => m === "ReadWriteMany" || (readOnly && m === "ReadOnlyMany"));

/**
 * Whether the VMI can move, as KubeVirt's condition says it: its claims (`claims` by name, as found in its namespace)
 * must be ReadWriteMany (ReadOnlyMany will do for one only read), and so must the VM's backend-storage claim, which
 * is ReadWriteOnce here (ADR 16); a pod-network interface must not be a bridge. Disks local to the pod
 * (containerDisk, emptyDisk, an ephemeral volume's overlay) make it a BlockMigration.
 */
export function liveMigratability(
  spec: VmiSpec,
  claims: ReadonlyMap<string, ClaimObject>,
  backendStorageClaim?: string,
): LiveMigratability {
  const local = (spec.volumes ?? []).some(
    (v) => v.containerDisk !== undefined || v.emptyDisk !== undefined || v.ephemeral !== undefined,
  );
  const method = local ? "BlockMigration" : "LiveMigration";
  const unshared = claimVolumes(spec).filter((c) => !shared(claims.get(c.claimName), c.readOnly));
  const backendClaims =
    hasPersistentTpm(spec) || hasPersistentEfi(spec) ? [backendStorageClaim ?? "persistent-state-for-<VM>"] : [];
  if (unshared.length > 0 || backendClaims.length > 0) {
    const names = [
      ...unshared.map((c) => `${c.claimName} (volume ${c.volume})`),
      ...backendClaims.map((c) => `${c} (persistent EFI or TPM state, ReadWriteOnce)`),
    ];
    return {
      status: ConditionStatus.False,
      reason: LiveMigratableReason.DisksNotLiveMigratable,
      message:
        `cannot migrate VMI: PVC ${names.join(", ")} ${names.length > 1 ? "are" : "is"} not shared; live ` +
        "migration needs every claim ReadWriteMany, which a target pod on another node can mount while " +
        "the source's holds it",
      method,
    };
  }
  const pod = podNetworkInterface(spec);
  const bridged = spec.domain.devices.interfaces?.find((i) => i.name === pod && i.bridge !== undefined);
  if (bridged) {
    return {
      status: ConditionStatus.False,
      reason: LiveMigratableReason.InterfaceNotLiveMigratable,
      message:
        `cannot migrate VMI: interface ${bridged.name} binds the pod network as a bridge, and the ` +
        "guest would keep the source pod's address; use masquerade",
      method,
    };
  }
  return { status: ConditionStatus.True, method };
}

/** Whether the VMI's LiveMigratable condition says it can move (no condition: it cannot yet). */
export function isLiveMigratable(vmi: Pick<VirtualMachineInstance, "status">): boolean {
  return (
    vmi.status?.conditions?.some(
      (c) => c.type === VmiConditionType.LiveMigratable && c.status === ConditionStatus.True,
    ) === true
  );
}

/** Why a migration of this VMI cannot be asked for now, in a sentence; undefined when it can. */
export function migrationRefusal(vmi: Pick<VirtualMachineInstance, "status" | "metadata">): string | undefined {
  const name = vmi.metadata.name ?? "";
  if (vmi.status?.phase !== VmiPhase.Running)
    return (
      `VMI ${name} is not running (its phase ` +
      `is ${vmi.status?.phase ?? "Pending"}): only a running VMI can be migrated`
    );
  const condition = vmi.status.conditions?.find((c) => c.type === VmiConditionType.LiveMigratable);
  if (condition?.status !== ConditionStatus.True) {
    const why = condition
      ? `${condition.reason ?? ""}: ${condition.message ?? ""}`
      : "its LiveMigratable condition is not there yet";
    return `VMI ${name} is not live migratable: ${why}`;
  }
  if (isMigrating(vmi))
    return (
      `VMI ${name} is already migrating (migration uid ${vmi.status.migrationState?.migrationUid ?? ""}); ` +
      "wait for it to end, or delete that VirtualMachineInstanceMigration to cancel it"
    );
  return undefined;
}

/** The parts of a launcher pod these rules read. */
interface PodFacts {
  metadata: { name?: string; uid?: string; labels?: Record<string, string> };
}

/** The VMIM uid a migration target pod is labelled with; undefined for a pod made as a VMI's first launcher. */
export const migrationJobOf = (pod: PodFacts): string | undefined => pod.metadata.labels?.[Label.MigrationJobUid];

/**
 * The VMI's launcher pods split by role: `current`, the pods the VMI runs (or starts) in, the VMI controller's;
 * `targets`, the pods of migrations that have not succeeded, the migration controller's; `left`, the pods a completed
 * migration left behind, to be deleted. A target pod becomes current once its migration completed (and stays so: it
 * is then among status.activePods, as the next migration's source).
 */
export function launcherPodRoles<P extends PodFacts>(
  vmi: Pick<VirtualMachineInstance, "status">,
  pods: readonly P[],
): { current: P[]; targets: P[]; left: P[] } {
  const state = vmi.status?.migrationState;
  const movedTo = state?.completed === true && state.targetPod ? state.targetPod : undefined;
  const active = new Set(Object.keys(vmi.status?.activePods ?? {}));
  const roles = { current: [] as P[], targets: [] as P[], left: [] as P[] };
  for (const pod of pods) {
    const job = migrationJobOf(pod);
    const activeTarget = job !== undefined && !active.has(pod.metadata.uid ?? "");
    if (movedTo !== undefined && pod.metadata.name === movedTo) roles.current.push(pod);
    else if (activeTarget && !(movedTo !== undefined && job === state?.migrationUid)) roles.targets.push(pod);
    else if (movedTo !== undefined) roles.left.push(pod);
    else roles.current.push(pod);
  }
  return roles;
}
