import { type PersistentVolumeClaim, type Pod, kubeTime, setCondition } from "@kubevirt-ts/kube";
import {
  type Condition,
  DEFAULT_SNAPSHOT_FAILURE_DEADLINE,
  DeletionPolicy,
  SNAPSHOT_API_VERSION,
  SnapshotConditionType,
  SnapshotIndication,
  SnapshotKind,
  SnapshotPhase,
  VOLUME_COPY_KIND_ANNOTATION,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  type VirtualMachineSnapshotStatus,
  VmiConditionType,
  VmiPhase,
  controllerRef,
  snapshotContentName,
  volumeCopyName,
} from "@kubevirt-ts/kubevirt-api";
import { claimVolumes, indicationMeanings, parseDurationSeconds } from "@kubevirt-ts/vm-rules";
import { importerTrouble } from "../datavolume/decide.ts";

// What the snapshot controller does about one VirtualMachineSnapshot, decided from what it observes alone (pure, so
// KubeVirt's phases, indications and conditions are tested without a cluster). The way (docs/adr/0027): the VM is
// marked (status.snapshotInProgress), the content written (the VM as it is, one backup per claim volume), the guest
// quiesced when it runs (frozen through its agent, else paused), each claim copied by a pod into a claim of its own,
// the guest released, and the snapshot marked ready. Every step is read back from the cluster before the next.

/** KubeVirt's finalizer on a snapshot: held until the guest is released and the VM no longer marked. */
export const SNAPSHOT_FINALIZER = "snapshot.kubevirt.io/vmsnapshot-protection";

/** How a running guest is kept still while its disks are copied. */
export type Quiesce = "freeze" | "pause" | "none";

export type SnapshotAction =
  | { kind: "addFinalizer" }
  | { kind: "removeFinalizer" }
  /** Marks the VM (snapshot: the snapshot's name) or lifts the snapshot's mark (null), `vm` as it was observed. */
  | { kind: "markVm"; snapshot: string | null; vm: VirtualMachine }
  | { kind: "createContent"; content: VirtualMachineSnapshotContent }
  | { kind: "quiesce"; how: Exclude<Quiesce, "none">; unfreezeTimeout: string }
  | { kind: "release"; how: Exclude<Quiesce, "none"> }
  | { kind: "createCopyClaim"; claim: PersistentVolumeClaim }
  | { kind: "createCopyPod"; volume: string; source: string; target: string; inUse: boolean }
  | { kind: "deleteCopyPod"; name: string }
  | { kind: "writeContentStatus"; status: NonNullable<VirtualMachineSnapshotContent["status"]> };

export interface SnapshotObservation {
  snapshot: VirtualMachineSnapshot;
  vm: VirtualMachine | undefined;
  vmi: VirtualMachineInstance | undefined;
  content: VirtualMachineSnapshotContent | undefined;
  /** The claims in the snapshot's namespace, by name: the VM's and the copies. */
  claim: (name: string) => PersistentVolumeClaim | undefined;
  /** The copy pod of a copy claim (by the claim's name), if the controller made it (claimCopyPod). */
  copyPod: (target: string) => Pod | undefined;
  /** A pod in a copy pod's place that the controller did not make, and why. */
  foreignPod: (target: string) => string | undefined;
  /** Whether the controller can copy claims: it has the importer image (where kubevirt-ts serves DataVolumes). */
  copier: boolean;
  now: Date;
}

export interface SnapshotDecision {
  actions: SnapshotAction[];
  status: VirtualMachineSnapshotStatus;
  /** Look again after so long (the failure deadline), even if nothing changes. */
  requeueAfterMs?: number;
}

const FINAL: readonly string[] = [SnapshotPhase.Succeeded, SnapshotPhase.Failed];

/** Whether the snapshot is done: succeeded or failed. */
export const isFinal = (snapshot: VirtualMachineSnapshot): boolean => FINAL.includes(snapshot.status?.phase ?? "");

/** The failure deadline in seconds, 0 for none: spec.failureDeadline or KubeVirt's 5 minutes. */
export function failureDeadlineSeconds(snapshot: VirtualMachineSnapshot): number {
  return parseDurationSeconds(snapshot.spec.failureDeadline ?? DEFAULT_SNAPSHOT_FAILURE_DEADLINE) ?? 0;
}

/** Whether the running guest can be frozen: its agent is connected. */
const agentConnected = (vmi: VirtualMachineInstance) =>
  vmi.status?.conditions?.some((c) => c.type === VmiConditionType.AgentConnected && c.status === "True") === true;
const paused = (vmi: VirtualMachineInstance | undefined) =>
  vmi?.status?.conditions?.some((c) => c.type === VmiConditionType.Paused && c.status === "True") === true;

/** The VM's volumes the snapshot copies (those backed by a claim the guest writes) and those it leaves out. */
export function snapshotVolumes(vm: VirtualMachine): {
  included: { volume: string; claim: string }[];
  excluded: string[];
} {
  const claims = claimVolumes(vm.spec.template.spec).filter((c) => !c.ephemeral);
  const included = claims.map((c) => ({ volume: c.volume, claim: c.claimName }));
  const names = new Set(included.map((c) => c.volume));
  const excluded = (vm.spec.template.spec.volumes ?? []).map((v) => v.name).filter((n) => !names.has(n));
  return { included, excluded };
}

/** The indications of a VM as it is now, and how its guest is kept still for the copy. */
export function indicationsOf(vmi: VirtualMachineInstance | undefined): {
  indications: SnapshotIndication[];
  messages: Partial<Record<SnapshotIndication, string>>;
} {
  if (vmi?.status?.phase !== VmiPhase.Running) return { indications: [], messages: {} };
  const indications = agentConnected(vmi)
    ? [SnapshotIndication.Online, SnapshotIndication.GuestAgent]
    : [SnapshotIndication.Online, SnapshotIndication.NoGuestAgent, ...(paused(vmi) ? [SnapshotIndication.Paused] : [])];
  return { indications, messages: indicationMeanings(indications) };
}

/** How the guest is kept still, from the indications written when the snapshot began. */
export function quiesceOf(indications: readonly string[] | undefined): Quiesce {
  const has = (i: SnapshotIndication) => indications?.includes(i) === true;
  if (!has(SnapshotIndication.Online)) return "none";
  if (has(SnapshotIndication.GuestAgent)) return "freeze";
  return has(SnapshotIndication.Paused) ? "none" : "pause";
}

/** Whether the copy reads disks a QEMU holds open: the VM ran when the snapshot began (paused by its user or not). */
export function sourceInUse(indications: readonly string[] | undefined): boolean {
  return indications?.includes(SnapshotIndication.Online) === true;
}

/** Whether the guest is kept still as `how` says, by the VMI's status. */
function isQuiesced(how: Quiesce, vmi: VirtualMachineInstance | undefined): boolean {
  if (how === "freeze") return vmi?.status?.fsFreezeStatus === "frozen";
  if (how === "pause") return paused(vmi);
  return true;
}

function withConditions(
  status: VirtualMachineSnapshotStatus,
  progressing: boolean,
  ready: boolean,
  reason: string,
  message: string,
  now: Date,
): VirtualMachineSnapshotStatus {
  const condition = (type: string, value: boolean) => ({
    type,
    status: value ? ("True" as const) : ("False" as const),
    reason,
    message,
  });
  let conditions = setCondition<Condition>(
    status.conditions,
    condition(SnapshotConditionType.Progressing, progressing),
    now,
  );
  conditions = setCondition<Condition>(conditions, condition(SnapshotConditionType.Ready, ready), now);
  return { ...status, conditions };
}

/** The content a snapshot writes: the VM as it is, and a backup of each claim volume with the claim as it is. */
export function snapshotContent(
  snapshot: VirtualMachineSnapshot,
  vm: VirtualMachine,
  claims: { volume: string; claim: PersistentVolumeClaim }[],
): VirtualMachineSnapshotContent {
  const uid = snapshot.metadata.uid ?? "";
  const retain = snapshot.spec.deletionPolicy === DeletionPolicy.Retain;
  const { name, namespace, labels, annotations, uid: vmUid, generation } = vm.metadata;
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: SnapshotKind.VirtualMachineSnapshotContent,
    metadata: {
      name: snapshotContentName(uid),
      namespace: snapshot.metadata.namespace,
      annotations: { [VOLUME_COPY_KIND_ANNOTATION]: "PersistentVolumeClaim" },
      // Deleted with its snapshot unless the snapshot retains it (KubeVirt's deletionPolicy).
      ...(retain ? {} : { ownerReferences: [controllerRef(snapshot)] }),
    },
    spec: {
      virtualMachineSnapshotName: snapshot.metadata.name,
      source: {
        virtualMachine: {
          metadata: {
            name,
            namespace,
            uid: vmUid,
            generation,
            ...(labels ? { labels } : {}),
            ...(annotations ? { annotations } : {}),
          },
          spec: vm.spec,
        },
      },
      volumeBackups: claims.map(({ volume, claim }) => ({
        volumeName: volume,
        persistentVolumeClaim: {
          metadata: {
            name: claim.metadata.name,
            namespace: claim.metadata.namespace,
            ...(claim.metadata.labels ? { labels: claim.metadata.labels } : {}),
            ...(claim.metadata.annotations ? { annotations: claim.metadata.annotations } : {}),
          },
          spec: { ...claim.spec },
        },
        volumeSnapshotName: volumeCopyName(uid, volume),
      })),
    },
  };
}

/** Why a content in the snapshot's place is not the snapshot's own, if it is not: made for another snapshot. */
export function contentNotOurs(
  snapshot: VirtualMachineSnapshot,
  content: VirtualMachineSnapshotContent,
): string | undefined {
  const name = content.metadata.name ?? "";
  if (content.spec.virtualMachineSnapshotName !== snapshot.metadata.name)
    return (
      `the content ${name} is of snapshot ${String(content.spec.virtualMachineSnapshotName)}, not of this one; ` +
      "delete it, or take the snapshot under another name"
    );
  const owner = content.metadata.ownerReferences?.find((r) => r.controller === true);
  // A retained content (deletionPolicy Retain) has no owner; one with an owner must be this snapshot's.
  if (owner && owner.uid !== snapshot.metadata.uid)
    return (
      `the content ${name} is owned by ${owner.kind} ${owner.name} (uid ${owner.uid}), not by this snapshot; ` +
      "delete it"
    );
  if (!owner && snapshot.spec.deletionPolicy !== DeletionPolicy.Retain)
    return `the content ${name} has no owner, while this snapshot's content is owned by it; delete it`;
  return undefined;
}

/** The claim a volume is copied into: the source's namespace, StorageClass, access modes, mode and size. */
export function copyClaim(
  content: VirtualMachineSnapshotContent,
  target: string,
  source: PersistentVolumeClaim,
): PersistentVolumeClaim {
  const spec = source.spec ?? {};
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: target,
      namespace: content.metadata.namespace,
      ownerReferences: [controllerRef(content)],
    },
    spec: {
      accessModes: spec.accessModes ?? ["ReadWriteOnce"],
      ...(spec.volumeMode ? { volumeMode: spec.volumeMode } : {}),
      ...(spec.storageClassName !== undefined ? { storageClassName: spec.storageClassName } : {}),
      resources: { requests: { storage: spec.resources?.requests?.storage ?? "0" } },
    },
  };
}

/**
 * The snapshot's status when a step failed: its status as it was, with the error (bounded). The decided status is not
 * written then: it may be final, and a final snapshot does not try again what it would have let go (the release).
 */
export function failedStepStatus(
  snapshot: VirtualMachineSnapshot,
  action: SnapshotAction,
  error: unknown,
  now: Date,
): VirtualMachineSnapshotStatus {
  const message = `${action.kind} failed: ${error instanceof Error ? error.message : String(error)}`;
  return { ...snapshot.status, error: { time: kubeTime(now), message: message.slice(0, 1024) } };
}

/** The unfreeze timeout a freeze asks for: what is left of the failure deadline (at least 10 s), or 5 minutes. */
function unfreezeTimeout(snapshot: VirtualMachineSnapshot, now: Date): string {
  const deadline = failureDeadlineSeconds(snapshot);
  if (deadline === 0) return DEFAULT_SNAPSHOT_FAILURE_DEADLINE;
  const started = Date.parse(snapshot.metadata.creationTimestamp ?? "") || now.getTime();
  const left = Math.ceil((started + deadline * 1000 - now.getTime()) / 1000);
  return `${String(Math.max(10, left))}s`;
}

export function decideSnapshot(o: SnapshotObservation): SnapshotDecision {
  const { snapshot, vm, vmi, content, now } = o;
  const name = snapshot.metadata.name ?? "";
  const base: VirtualMachineSnapshotStatus = { ...snapshot.status };
  const phase = base.phase;
  const how = quiesceOf(base.indications);
  const markedByUs = vm?.status?.snapshotInProgress === name;
  // A content in this snapshot's place that is not its own (made for another snapshot) is neither read nor undone.
  const foreignContent = content && contentNotOurs(snapshot, content);
  const ours = foreignContent ? undefined : content;
  const copyNames = (ours?.spec.volumeBackups ?? []).map((b) => b.volumeSnapshotName ?? "");
  const runningPods = copyNames.filter((t) => o.copyPod(t) !== undefined);
  // Undoes what the snapshot holds on the VM: the guest released, its copy pods gone, the VM no longer marked. Once the
  // content is written a quiesce may have been asked for, though the VMI may not show it yet: the release is sent
  // whatever the VMI says (a guest not paused or frozen is released already).
  // The VM's mark goes first: virt-api refuses to unpause a VM marked (KubeVirt's rule), this snapshot's release too.
  const letGo = (released: boolean): SnapshotAction[] => [
    ...(markedByUs ? [{ kind: "markVm" as const, snapshot: null, vm }] : []),
    ...(how !== "none" && !released && ours !== undefined ? [{ kind: "release" as const, how }] : []),
    ...runningPods.map((t) => ({ kind: "deleteCopyPod" as const, name: t })),
  ];

  if (snapshot.metadata.deletionTimestamp) {
    const holds = snapshot.metadata.finalizers?.includes(SNAPSHOT_FINALIZER) === true;
    // Deleted before it was done: as KubeVirt's, the phase says Deleting while what it holds is let go; the finalizer
    // goes on the next pass, once that status is written (which is only after every let-go step succeeded).
    if (holds && phase !== undefined && !FINAL.includes(phase) && phase !== SnapshotPhase.Deleting) {
      const deleting = withConditions(
        { ...base, phase: SnapshotPhase.Deleting, readyToUse: false },
        false,
        false,
        "Deleting",
        "VM snapshot is deleting",
        now,
      );
      return { actions: letGo(false), status: deleting };
    }
    const actions = letGo(FINAL.includes(phase ?? "") || phase === SnapshotPhase.Deleting);
    return { actions: holds ? [...actions, { kind: "removeFinalizer" }] : actions, status: base };
  }
  if (phase !== undefined && FINAL.includes(phase)) {
    // Done: anything still held (a write that failed half-way) is let go.
    const actions = letGo(true);
    return { actions, status: base };
  }
  const actions: SnapshotAction[] = [];
  if (snapshot.metadata.finalizers?.includes(SNAPSHOT_FINALIZER) !== true) actions.push({ kind: "addFinalizer" });

  const deadline = failureDeadlineSeconds(snapshot);
  const started = Date.parse(snapshot.metadata.creationTimestamp ?? "") || now.getTime();
  const left = deadline === 0 ? undefined : started + deadline * 1000 - now.getTime();
  const fail = (message: string): SnapshotDecision => ({
    actions: [...actions, ...letGo(false)],
    status: withConditions(
      { ...base, phase: SnapshotPhase.Failed, readyToUse: false, error: { time: kubeTime(now), message } },
      false,
      false,
      "Failed",
      message,
      now,
    ),
  });
  if (left !== undefined && left <= 0)
    return fail(
      "the snapshot was not done within its failureDeadline " +
        `(${snapshot.spec.failureDeadline ?? DEFAULT_SNAPSHOT_FAILURE_DEADLINE}); take another, with a longer ` +
        "failureDeadline if its disks are large",
    );
  if (foreignContent) return fail(foreignContent);
  const requeue = left === undefined ? {} : { requeueAfterMs: left };
  const waiting = (reason: string, message: string): SnapshotDecision => ({
    actions,
    status: withConditions(
      { ...base, phase: SnapshotPhase.InProgress, readyToUse: false },
      false,
      false,
      reason,
      message,
      now,
    ),
    ...requeue,
  });

  if (!vm) return waiting("Pending", `the source VirtualMachine ${snapshot.spec.source.name} does not exist`);
  if (vm.status?.snapshotInProgress && !markedByUs)
    return waiting("Pending", `snapshot ${vm.status.snapshotInProgress} of the VM is under way; this one waits for it`);
  if (vm.status?.restoreInProgress)
    return waiting(
      "Pending",
      `restore ${vm.status.restoreInProgress} of the VM is under way; the snapshot waits for it`,
    );
  const status: VirtualMachineSnapshotStatus = { ...base, phase: SnapshotPhase.InProgress, readyToUse: false };
  status.sourceUID = vm.metadata.uid;
  if (!markedByUs) {
    actions.push({ kind: "markVm", snapshot: name, vm });
    return { actions, status: withConditions(status, true, false, "InProgress", "Marking the VM", now), ...requeue };
  }

  if (!content) {
    if (
      vmi &&
      vmi.status?.phase !== VmiPhase.Running &&
      vmi.status?.phase !== VmiPhase.Succeeded &&
      vmi.status?.phase !== VmiPhase.Failed
    )
      return waiting(
        "Pending",
        `the VM is ${vmi.status?.phase ?? "starting"}; the snapshot waits until it runs or stops`,
      );
    const volumes = snapshotVolumes(vm);
    const claims = volumes.included.map((v) => ({ volume: v.volume, claim: o.claim(v.claim) }));
    const missing = claims.find((c) => c.claim === undefined);
    if (missing) return waiting("Pending", `the claim of volume ${missing.volume} does not exist yet`);
    if (claims.length > 0 && !o.copier)
      return fail(
        "kubevirt-ts copies a VM's claims with its importer, which runs where it serves DataVolumes itself " +
          "(CDI absent, docs/data-protection.md); on this cluster, snapshot a VM with no claim volumes, or install " +
          "kubevirt-ts without CDI",
      );
    const block = claims.find((c) => c.claim?.spec?.volumeMode === "Block");
    if (block)
      return fail(
        `volume ${block.volume}'s claim is in Block mode, which kubevirt-ts does not snapshot yet ` +
          "(only Filesystem claims, docs/data-protection.md)",
      );
    const running = vmi?.status?.phase === VmiPhase.Running ? vmi : undefined;
    const { indications, messages } = indicationsOf(running);
    const made = snapshotContent(
      snapshot,
      vm,
      claims.flatMap((c) => (c.claim ? [{ volume: c.volume, claim: c.claim }] : [])),
    );
    actions.push({ kind: "createContent", content: made });
    status.virtualMachineSnapshotContentName = made.metadata.name;
    status.snapshotVolumes = {
      includedVolumes: volumes.included.map((v) => v.volume),
      excludedVolumes: volumes.excluded,
    };
    status.indications = indications;
    status.sourceIndications = indications.map((indication) => ({ indication, message: messages[indication] ?? "" }));
    return {
      actions,
      status: withConditions(status, true, false, "InProgress", "Taking the snapshot", now),
      ...requeue,
    };
  }

  // The content is written: the guest kept still (when it runs), then each claim copied.
  const backups = content.spec.volumeBackups ?? [];
  const copied = (target: string) =>
    content.status?.volumeSnapshotStatus?.find((s) => s.volumeSnapshotName === target)?.readyToUse === true;
  const allCopied = backups.every((b) => copied(b.volumeSnapshotName ?? ""));
  if (!allCopied) {
    if (how !== "none" && !isQuiesced(how, vmi)) {
      if (runningPods.length > 0 || backups.some((b) => copied(b.volumeSnapshotName ?? ""))) {
        // The guest was let go while its disks were being copied (the freeze's timeout, or someone else): as KubeVirt
        // says of a freeze that timed out.
        if (!status.indications?.includes(SnapshotIndication.QuiesceTimeout)) {
          status.indications = [...(status.indications ?? []), SnapshotIndication.QuiesceTimeout];
          status.sourceIndications = [
            ...(status.sourceIndications ?? []),
            {
              indication: SnapshotIndication.QuiesceTimeout,
              message: "The guest was released before its disks were copied: the copy may not be consistent.",
            },
          ];
        }
      } else {
        if (!vmi || vmi.status?.phase !== VmiPhase.Running)
          return waiting("Pending", "the VM stopped before it could be quiesced; the snapshot waits");
        actions.push({ kind: "quiesce", how, unfreezeTimeout: unfreezeTimeout(snapshot, now) });
        return {
          actions,
          status: withConditions(
            status,
            true,
            false,
            "InProgress",
            how === "freeze" ? "Freezing the guest" : "Pausing the guest",
            now,
          ),
          ...requeue,
        };
      }
    }
    const volumeStatus = [...(content.status?.volumeSnapshotStatus ?? [])];
    let changed = false;
    let blocked: string | undefined;
    for (const backup of backups) {
      const target = backup.volumeSnapshotName ?? "";
      if (copied(target)) continue;
      const sourceName = backup.persistentVolumeClaim.metadata?.name ?? "";
      const source = o.claim(sourceName);
      if (!source) {
        blocked = `the claim ${sourceName} of volume ${backup.volumeName} is gone`;
        continue;
      }
      if (!o.claim(target)) actions.push({ kind: "createCopyClaim", claim: copyClaim(content, target, source) });
      const foreign = o.foreignPod(target);
      if (foreign) {
        blocked =
          `a pod in the place of volume ${backup.volumeName}'s copy pod is not the controller's (${foreign}); ` +
          "delete it";
        continue;
      }
      const pod = o.copyPod(target);
      if (!pod) {
        actions.push({
          kind: "createCopyPod",
          volume: backup.volumeName,
          source: sourceName,
          target,
          inUse: sourceInUse(base.indications),
        });
      } else if (pod.status?.phase !== "Succeeded") {
        // The kubelet runs a failed copy again; meanwhile the snapshot says why it failed (the importer's message).
        const trouble = importerTrouble(pod);
        // The kubelet keeps a termination message to 4 KiB; the snapshot keeps 1 KiB of it.
        if (trouble)
          blocked =
            `the copy of volume ${backup.volumeName} failed, and is tried again: ` + trouble.message.slice(0, 1024);
      } else {
        const i = volumeStatus.findIndex((s) => s.volumeSnapshotName === target);
        const entry = { volumeSnapshotName: target, creationTime: kubeTime(now), readyToUse: true };
        if (i >= 0) volumeStatus[i] = entry;
        else volumeStatus.push(entry);
        changed = true;
      }
    }
    if (changed)
      actions.push({
        kind: "writeContentStatus",
        status: { ...content.status, readyToUse: false, volumeSnapshotStatus: volumeStatus },
      });
    const message =
      blocked ??
      `Copying ${String(backups.filter((b) => !copied(b.volumeSnapshotName ?? "")).length)} of ` +
        `${String(backups.length)} volumes`;
    return {
      actions,
      status: withConditions(status, !blocked, false, blocked ? "Pending" : "InProgress", message, now),
      ...requeue,
    };
  }

  // Every copy is in: the guest let go, the content and the snapshot ready, the VM no longer marked.
  const creationTime = content.status?.creationTime ?? kubeTime(now);
  if (content.status?.readyToUse !== true)
    actions.push({ kind: "writeContentStatus", status: { ...content.status, creationTime, readyToUse: true } });
  actions.push(...letGo(false));
  // A step that failed on the way and then went through leaves no error behind.
  const succeeded: VirtualMachineSnapshotStatus = { ...status };
  delete succeeded.error;
  const done = withConditions(
    { ...succeeded, phase: SnapshotPhase.Succeeded, readyToUse: true, creationTime },
    false,
    true,
    "Succeeded",
    "Operation complete",
    now,
  );
  return { actions, status: done };
}
