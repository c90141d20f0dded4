import { isDeepStrictEqual } from "node:util";
import {
  ApiError,
  type EventRecorder,
  type Informer,
  WrittenVersions,
  keyOf as objectKey,
  type KubeClient,
  type Reconcile,
  addFinalizer,
  isAlreadyExists,
  isNotFound,
  kubeTime,
  removeFinalizer,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  type DataVolume,
  DataVolumePhase,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineRestore,
  type VirtualMachineRestoreStatus,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { planVmRequest } from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";
import {
  RESTORE_FINALIZER,
  RESTORE_NAME_ANNOTATION,
  deletedDataVolumes,
  heldForNewVm,
  restoreComplete,
  restoreDataVolume,
  restoreFailed,
  restoredBy,
  restoredVm,
  targetReadiness,
  unsupported,
  vmOwnerRef,
  volumeRestores,
  withConditions,
} from "./decide.ts";

// The VirtualMachineRestore controller, as KubeVirt's restore controller goes, one step per pass, each written to the
// restore's status before the next: the target is stopped and marked (status.restoreInProgress, which holds its
// start), each volume's claim is made and filled from the snapshot's copy (a DataVolume cloning the copy claim, which
// the DataVolume controller fills with the importer's pvc-clone pod), then the target is rewritten (or made) from
// the snapshot's VM, its DataVolumes no longer named are deleted, and the mark is lifted. The decisions are in
// decide.ts; docs/data-protection.md says what a restore does.

/** KubeVirt's event reasons. */
const Reason = {
  Complete: "VirtualMachineRestoreComplete",
  Error: "VirtualMachineRestoreError",
  Failed: "Operation failed",
  TargetNotReady: "RestoreTargetNotReady",
} as const;

/** How often a restore waiting for its target, or for the snapshot to be ready, looks again without an event. */
const RECHECK_MS = 5_000;

export interface RestoreControllerDeps {
  client: KubeClient;
  restores: Informer<VirtualMachineRestore>;
  snapshots: Informer<VirtualMachineSnapshot>;
  contents: Informer<VirtualMachineSnapshotContent>;
  vms: Informer<VirtualMachine>;
  vmis: Informer<VirtualMachineInstance>;
  /** DataVolumes, where the cluster serves them: each restored claim is one's. */
  dataVolumes: Informer<DataVolume> | undefined;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
}

/** The index of restores by the VM they target, namespace/name, and by their snapshot. */
export const RESTORES_BY_TARGET = "target";
export const RESTORES_BY_SNAPSHOT = "snapshot";
export const restoresByTarget = (r: VirtualMachineRestore): string[] => [
  `${r.metadata.namespace ?? ""}/${r.spec.target.name}`,
];
export const restoresBySnapshot = (r: VirtualMachineRestore): string[] => [
  `${r.metadata.namespace ?? ""}/${r.spec.virtualMachineSnapshotName}`,
];

/** The restores filed in the index under a key, as queue keys. */
export const restoresIn = (restores: Informer<VirtualMachineRestore>, index: string, key: string): string[] =>
  restores.byIndex(index, key).map((r) => objectKey(r));

/** The restore that made a DataVolume (its annotation), as a queue key. */
export const restoreOfDataVolume = (dv: DataVolume): string[] => {
  const name = dv.metadata.annotations?.[RESTORE_NAME_ANNOTATION];
  return name === undefined ? [] : [`${dv.metadata.namespace ?? ""}/${name}`];
};

export function createRestoreReconciler(deps: RestoreControllerDeps): Reconcile {
  const { client, restores, vms, vmis, recorder, now } = deps;
  const type = kubevirtResources.virtualMachineRestores;
  /** The VM as the API server has it now (a mark written just before may not be cached yet). */
  const currentVm = (namespace: string | undefined, name: string) =>
    client.find<VirtualMachine>(kubevirtResources.virtualMachines, namespace, name);

  // The versions of each restore this pass's writes replaced: a cached copy still at one of them is not acted on (its
  // watch event brings the restore back), so that no write goes out from a stale copy.
  const written = new WrittenVersions();
  const replacedThisPass = new Map<string, (string | undefined)[]>();
  const wrote = (before: VirtualMachineRestore) => {
    const key = objectKey(before);
    const versions = [...(replacedThisPass.get(key) ?? []), before.metadata.resourceVersion];
    replacedThisPass.set(key, versions);
    written.wrote(key, ...versions);
  };
  const writeStatus = async (restore: VirtualMachineRestore, status: VirtualMachineRestoreStatus) => {
    const updated = await writeStatusIfChanged(client, type, restore, status);
    if (updated) wrote(restore);
    return updated;
  };

  /** A step that cannot go on yet: said on the conditions (and an event), and looked at again. */
  async function notYet(restore: VirtualMachineRestore, message: string, warn = true) {
    if (warn && !restore.status?.conditions?.some((c) => c.message === message))
      recorder.record(restore, "Warning", Reason.Error, `The restore met an error: ${message}`);
    await writeStatus(restore, withConditions(restore.status ?? {}, false, false, message, now()));
    return { requeueAfterMs: RECHECK_MS };
  }

  /** The restore fails for good, as KubeVirt's: its Failure condition is set and it is not looked at again. */
  async function fail(restore: VirtualMachineRestore, message: string) {
    recorder.record(restore, "Warning", Reason.Failed, `The restore failed: ${message}`);
    // A failed restore lets go of its target, which may start again. The target is read from the API server: this
    // pass may have marked it, and the restore is not looked at again once failed.
    await unmark(restore, await currentVm(restore.metadata.namespace, restore.spec.target.name));
    await writeStatus(restore, withConditions(restore.status ?? {}, false, false, message, now(), message));
    return undefined;
  }

  /**
   * Marks the target as being restored (status.restoreInProgress), as one JSON patch whose tests make it atomic: only
   * while no snapshot and no other restore has marked it. False when the VM changed meanwhile (a test failed): the
   * next pass looks again.
   */
  async function mark(restore: VirtualMachineRestore, vm: VirtualMachine): Promise<boolean> {
    const name = restore.metadata.name ?? "";
    const patch =
      vm.status === undefined
        ? [
            { op: "test", path: "/status", value: null },
            { op: "add", path: "/status", value: { restoreInProgress: name } },
          ]
        : [
            { op: "test", path: "/status/snapshotInProgress", value: null },
            { op: "test", path: "/status/restoreInProgress", value: null },
            { op: "add", path: "/status/restoreInProgress", value: name },
          ];
    try {
      await client.patch(
        kubevirtResources.virtualMachines,
        vm.metadata.namespace,
        vm.metadata.name ?? "",
        patch,
        "json",
        "status",
      );
      return true;
    } catch (error) {
      if (error instanceof ApiError && (error.code === 409 || error.code === 422)) return false;
      throw error;
    }
  }

  /** Lifts the restore's mark from its target, if the mark is this restore's. */
  async function unmark(restore: VirtualMachineRestore, vm: VirtualMachine | undefined) {
    if (vm?.status?.restoreInProgress === undefined || vm.status.restoreInProgress !== restore.metadata.name) return;
    const status = { ...vm.status };
    delete status.restoreInProgress;
    await writeStatusIfChanged(client, kubevirtResources.virtualMachines, vm, status);
  }

  return async (key) => {
    const cached = restores.get(key);
    replacedThisPass.delete(key);
    if (!cached) {
      written.forget(key);
      return undefined;
    }
    if (written.isStale(key, cached.metadata.resourceVersion)) return undefined;
    const namespace = cached.metadata.namespace ?? "";
    const targetKey = `${namespace}/${cached.spec.target.name}`;
    const target = vms.get(targetKey);

    if (cached.metadata.deletionTimestamp) {
      // Read from the API server: a mark written just before the delete may not be in the cache yet.
      await unmark(cached, await currentVm(namespace, cached.spec.target.name));
      await removeFinalizer(client, type, cached, RESTORE_FINALIZER);
      return undefined;
    }
    if (!cached.status) {
      const init = "Initializing VirtualMachineRestore";
      await writeStatus(cached, withConditions({ complete: false }, true, false, init, now()));
      return undefined;
    }
    if (restoreComplete(cached) || restoreFailed(cached)) return undefined;
    const refused = unsupported(cached);
    if (refused !== undefined) return fail(cached, refused);

    // Owned by its target, as KubeVirt's (deleting the VM deletes its restores), and kept until it lets go of it.
    let restore = cached;
    if (target && (restore.metadata.ownerReferences ?? []).length === 0) {
      const unowned = restore;
      restore = await client.patch<VirtualMachineRestore>(
        type,
        namespace,
        restore.metadata.name ?? "",
        { metadata: { ownerReferences: [vmOwnerRef(target)] } },
        "merge",
      );
      wrote(unowned);
    }
    const unfinalized = restore;
    restore = await addFinalizer(client, type, restore, RESTORE_FINALIZER);
    if (restore !== unfinalized) wrote(unfinalized);

    // The target must be stopped (its VMI gone) before it is rewritten.
    const vmi = target && !restoredBy(restore, target) ? vmis.get(targetKey) : undefined;
    const readiness = targetReadiness(restore, vmi !== undefined, now());
    if (readiness.kind === "fail") return fail(restore, readiness.message);
    if (readiness.kind === "wait" || readiness.kind === "stop") {
      if (!restore.status?.conditions?.some((c) => c.message === readiness.message))
        recorder.record(restore, "Warning", Reason.TargetNotReady, readiness.message);
      if (readiness.kind === "stop" && target) await stopTarget(client, target, vmi);
      return notYet(restore, readiness.message, false);
    }

    const snapshotName = restore.spec.virtualMachineSnapshotName;
    const snapshot = deps.snapshots.get(`${namespace}/${snapshotName}`);
    if (!snapshot) return notYet(restore, `VMSnapshot ${namespace}/${snapshotName} does not exist`);
    if (snapshot.status?.phase === "Failed")
      return notYet(restore, `VMSnapshot ${namespace}/${snapshotName} failed and cannot be restored`);
    const contentName = snapshot.status?.virtualMachineSnapshotContentName;
    if (snapshot.status?.readyToUse !== true || contentName === undefined)
      return notYet(restore, `VMSnapshot ${namespace}/${snapshotName} is not ready`);
    const content = deps.contents.get(`${namespace}/${contentName}`);
    const contentOf = content?.spec.virtualMachineSnapshotName;
    if (content && contentOf !== snapshotName) {
      const owner = JSON.stringify((contentOf ?? "").slice(0, 253));
      return fail(
        restore,
        `VMSnapshotContent ${namespace}/${contentName} is VMSnapshot ${owner}'s, not ${snapshotName}'s: ` +
          "restore from the snapshot the content was made for",
      );
    }
    if (content?.status?.readyToUse !== true)
      return notYet(restore, `VMSnapshotContent ${namespace}/${contentName} is not ready`);
    const snapshotVm = content.spec.source.virtualMachine;
    if (!snapshotVm) return fail(restore, `VMSnapshotContent ${namespace}/${contentName} holds no VirtualMachine`);

    if (target && !restoredBy(restore, target)) {
      const sourceUid = snapshot.status.sourceUID;
      if (sourceUid !== undefined && sourceUid !== target.metadata.uid)
        return notYet(
          restore,
          `the target VM ${target.metadata.name ?? ""} exists and is not the VM the snapshot was taken of: ` +
            "restore to the snapshot's VM, or to a name no VM has",
        );
      const other = target.status?.restoreInProgress;
      if (other !== undefined && other !== restore.metadata.name)
        return notYet(restore, `the VM is being restored by ${other}: wait for it to complete`);
      const snapshotting = target.status?.snapshotInProgress;
      if (other === undefined && snapshotting !== undefined)
        return notYet(
          restore,
          `the VM is being snapshotted by ${snapshotting}: the restore waits for the snapshot to complete`,
          false,
        );
      if (other === undefined && !(await mark(restore, target)))
        return notYet(restore, "the VM changed while the restore marked it: marking it again", false);
    }

    const wanted = volumeRestores(restore, content);
    if (typeof wanted === "string") return fail(restore, wanted);
    const status = restore.status ?? {};
    if (!isDeepStrictEqual(status.restores ?? [], wanted)) {
      await writeStatus(
        restore,
        withConditions({ ...status, restores: wanted }, true, false, "Creating new PVCs", now()),
      );
      return undefined;
    }

    // Each restored claim is a DataVolume's, cloned from the snapshot's copy; the target is rewritten once all are in.
    if (!deps.dataVolumes)
      return fail(
        restore,
        "the cluster serves no DataVolumes, which restored claims are filled by: install CDI, or kubevirt-ts's chart " +
          "with dataVolumes.serve enabled",
      );
    const filling: string[] = [];
    for (const vr of wanted) {
      const dv = deps.dataVolumes.get(`${namespace}/${vr.persistentVolumeClaim}`);
      if (dv) {
        if (dv.metadata.annotations?.[RESTORE_NAME_ANNOTATION] !== restore.metadata.name)
          return notYet(
            restore,
            `a DataVolume ${vr.persistentVolumeClaim} exists that this restore did not make: delete it, or name ` +
              "another claim in spec.volumeRestoreOverrides",
          );
        if (dv.status?.phase !== DataVolumePhase.Succeeded)
          filling.push(`${vr.persistentVolumeClaim} ${dv.status?.progress ?? dv.status?.phase ?? "Pending"}`);
        continue;
      }
      const backup = content.spec.volumeBackups?.find((b) => b.volumeName === vr.volumeName);
      if (!backup) return fail(restore, `the snapshot's content holds no copy of volume ${vr.volumeName}`);
      try {
        await client.create(
          kubevirtResources.dataVolumes,
          namespace,
          restoreDataVolume(restore, vr, backup, snapshotVm, target),
        );
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
      }
      filling.push(`${vr.persistentVolumeClaim} Pending`);
    }
    if (filling.length > 0) {
      const waiting = `Waiting for new PVCs: ${filling.join(", ")}`;
      await writeStatus(restore, withConditions(status, true, false, waiting, now()));
      return undefined;
    }

    // The target, rewritten (or made) from the snapshot's VM.
    if (!target || !restoredBy(restore, target)) {
      const vm = restoredVm(restore, snapshotVm, target);
      if (typeof vm === "string") return fail(restore, vm);
      const deleted = deletedDataVolumes(target, vm);
      const next = withConditions(
        { ...status, ...(deleted.length > 0 ? { deletedDataVolumes: deleted } : {}) },
        true,
        false,
        "Updating target spec",
        now(),
      );
      const current = (await writeStatus(restore, next)) ?? restore;
      try {
        if (target) await client.update(kubevirtResources.virtualMachines, vm);
        else await client.create(kubevirtResources.virtualMachines, namespace, vm);
      } catch (error) {
        // The API server refused the VM itself (invalid, forbidden): trying it again gives the same answer.
        if (error instanceof ApiError && error.code >= 400 && error.code < 500 && ![404, 409, 429].includes(error.code))
          return fail(
            current,
            `the target VM could not be ${target ? "updated" : "created"}: ${error.message.slice(0, 1024)}`,
          );
        throw error;
      }
      return undefined;
    }

    // A new VM takes over the claims it was made with from the restore, unless the restore says no one owns them.
    for (const vr of wanted) {
      const dv = deps.dataVolumes.get(`${namespace}/${vr.persistentVolumeClaim}`);
      const refs = dv?.metadata.ownerReferences ?? [];
      if (!dv || !heldForNewVm(restore, refs)) continue;
      const owners = restore.spec.volumeOwnershipPolicy === "None" ? null : [vmOwnerRef(target)];
      if (owners === null && refs.length === 0) continue;
      await client.patch(
        kubevirtResources.dataVolumes,
        namespace,
        vr.persistentVolumeClaim,
        { metadata: { ownerReferences: owners } },
        "merge",
      );
    }
    for (const name of status.deletedDataVolumes ?? []) {
      if (!deps.dataVolumes.get(`${namespace}/${name}`)) continue;
      await client.delete(kubevirtResources.dataVolumes, namespace, name).catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
    }
    await unmark(restore, target);
    recorder.record(
      restore,
      "Normal",
      Reason.Complete,
      `Completed the VirtualMachineRestore ${restore.metadata.name ?? ""}`,
    );
    const done = withConditions(
      { ...status, complete: true, restoreTime: kubeTime(now()) },
      false,
      true,
      "Operation complete",
      now(),
    );
    await writeStatus(restore, done);
    return undefined;
  };
}

/** StopTarget: the VM is stopped as `virtctl stop` stops it (vm-rules' planVmRequest), by the controller. */
async function stopTarget(
  client: KubeClient,
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
): Promise<void> {
  const plan = planVmRequest(vm, vmi, "stop");
  if (plan.kind === "refuse") return;
  const { namespace, name = "" } = vm.metadata;
  if (plan.spec) await client.patch(kubevirtResources.virtualMachines, namespace, name, plan.spec, "json");
  if (plan.status)
    await client.patch(kubevirtResources.virtualMachines, namespace, name, plan.status, "json", "status");
}
