import {
  type EventRecorder,
  type Informer,
  type KubeClient,
  type KubeObject,
  type Reconcile,
  type ResourceType,
  WrittenVersions,
  isAlreadyExists,
  isNotFound,
  keyOf,
  kubeTime,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  ClonePhase,
  SnapshotConditionType,
  SnapshotPhase,
  type VirtualMachine,
  type VirtualMachineClone,
  type VirtualMachineCloneStatus,
  type VirtualMachineRestore,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { restoreComplete, restoreFailed, restoredBy } from "../restore/decide.ts";
import { clonePatches, cloneRestore, cloneRestoreName, cloneSnapshot, cloneStatus, targetName } from "./decide.ts";

// The VirtualMachineClone controller, as KubeVirt's clone controller goes, one step per pass, each written to the
// clone's status before the next: a VM source is snapshotted (a VirtualMachineSnapshot the clone owns), the snapshot
// is restored to the new VM (a VirtualMachineRestore the clone owns, whose patches carry the clone's filters, MACs
// and serial), and once the new VM is made both are deleted. A clone whose new VM is deleted is deleted, as
// KubeVirt's is. The decisions are in decide.ts; docs/data-protection.md says what a clone does.

/** KubeVirt's event reasons. */
const Reason = {
  SnapshotCreated: "SnapshotCreated",
  RestoreCreated: "RestoreCreated",
  TargetVMCreated: "TargetVMCreated",
  SourceDoesNotExist: "SourceDoesNotExist",
  Failed: "CloneFailed",
} as const;

/** How often a clone waiting for its source to exist looks again without an event. */
const RECHECK_MS = 5_000;

export interface CloneControllerDeps {
  client: KubeClient;
  clones: Informer<VirtualMachineClone>;
  snapshots: Informer<VirtualMachineSnapshot>;
  contents: Informer<VirtualMachineSnapshotContent>;
  restores: Informer<VirtualMachineRestore>;
  vms: Informer<VirtualMachine>;
  recorder: EventRecorder;
  now: () => Date;
}

/** The index of clones by the VMs they name, for the clones' informer: the source VM, and the new VM once named. */
export const CLONES_BY_VM = "vm";
export const clonesByVm = (c: VirtualMachineClone): string[] => {
  const ns = c.metadata.namespace ?? "";
  return [
    ...(c.spec.source.kind === "VirtualMachine" ? [`${ns}/${c.spec.source.name}`] : []),
    ...(c.status?.targetName ? [`${ns}/${c.status.targetName}`] : []),
  ];
};

export function createCloneReconciler(deps: CloneControllerDeps): Reconcile {
  const { client, clones, snapshots, contents, restores, vms, recorder, now } = deps;
  const type = kubevirtResources.virtualMachineClones;
  // The versions of each clone this controller's writes replaced: a cached copy still at one is not acted on.
  const written = new WrittenVersions();

  const writeStatus = async (clone: VirtualMachineClone, status: VirtualMachineCloneStatus) => {
    const updated = await writeStatusIfChanged(client, type, clone, status);
    if (updated) written.wrote(keyOf(clone), clone.metadata.resourceVersion);
    return updated;
  };
  const step = (clone: VirtualMachineClone, phase: ClonePhase, reason: string, more: VirtualMachineCloneStatus = {}) =>
    writeStatus(clone, cloneStatus({ ...clone.status, ...more }, phase, reason, now()));

  /** The clone fails for good, as KubeVirt's: phase Failed, and it is not looked at again. */
  async function fail(clone: VirtualMachineClone, message: string) {
    recorder.record(clone, "Warning", Reason.Failed, `The clone failed: ${message}`);
    await step(clone, ClonePhase.Failed, message);
    return undefined;
  }

  /** Creates an object the clone owns; one that exists already (an earlier pass made it) is taken as made. */
  async function create(kind: ResourceType, object: KubeObject) {
    try {
      await client.create(kind, object.metadata.namespace, object);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  }

  /** Once the new VM is made: the restore and the clone's own snapshot are deleted, and the status forgets them. */
  async function cleanUp(clone: VirtualMachineClone, ns: string) {
    const { restoreName, snapshotName } = clone.status ?? {};
    const drop = async (kind: ResourceType, name: string | null | undefined) => {
      if (!name) return;
      await client.delete(kind, ns, name).catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
    };
    await drop(kubevirtResources.virtualMachineRestores, restoreName);
    if (clone.spec.source.kind === "VirtualMachine")
      await drop(kubevirtResources.virtualMachineSnapshots, snapshotName);
    const status = { ...clone.status };
    delete status.restoreName;
    delete status.snapshotName;
    await writeStatus(clone, status);
  }

  return async (key) => {
    const clone = clones.get(key);
    if (!clone) {
      written.forget(key);
      return undefined;
    }
    if (written.isStale(key, clone.metadata.resourceVersion) || clone.metadata.deletionTimestamp) return undefined;
    const ns = clone.metadata.namespace ?? "";
    const status = clone.status ?? {};
    const { source } = clone.spec;
    if (status.phase === ClonePhase.Failed) return undefined;

    if (status.phase === ClonePhase.Succeeded) {
      const target = status.targetName ?? "";
      // A clone whose new VM is gone goes too, as KubeVirt's: read from the API server, as only a 404 means gone.
      if (
        !vms.get(`${ns}/${target}`) &&
        !(await client.find<VirtualMachine>(kubevirtResources.virtualMachines, ns, target))
      ) {
        await client.delete(type, ns, clone.metadata.name ?? "").catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
        return undefined;
      }
      if (status.restoreName || status.snapshotName) await cleanUp(clone, ns);
      return undefined;
    }

    // A VM source is snapshotted first, once it exists and while the new VM's name is free.
    const fromVm = source.kind === "VirtualMachine";
    const snapshotName = fromVm ? status.snapshotName : source.name;
    if (fromVm && !snapshotName) {
      if (!vms.get(`${ns}/${source.name}`)) {
        const why = `the source VirtualMachine ${source.name} does not exist: create it, or delete the clone`;
        if (status.conditions?.[0]?.message !== why) recorder.record(clone, "Warning", Reason.SourceDoesNotExist, why);
        await step(clone, ClonePhase.Unset, why);
        return { requeueAfterMs: RECHECK_MS };
      }
      const taken = targetName(clone, source.name);
      if (vms.get(`${ns}/${taken}`)) return fail(clone, targetTaken(taken));
      const snapshot = cloneSnapshot(clone);
      await create(kubevirtResources.virtualMachineSnapshots, snapshot);
      recorder.record(clone, "Normal", Reason.SnapshotCreated, `Created snapshot ${snapshot.metadata.name ?? ""}`);
      await step(clone, ClonePhase.SnapshotInProgress, `Taking snapshot ${snapshot.metadata.name ?? ""}`, {
        snapshotName: snapshot.metadata.name,
      });
      return undefined;
    }
    const snapshot =
      snapshots.get(`${ns}/${snapshotName ?? ""}`) ??
      (await client.find<VirtualMachineSnapshot>(kubevirtResources.virtualMachineSnapshots, ns, snapshotName ?? ""));
    if (!snapshot) {
      if (!fromVm && !status.restoreName) {
        await step(clone, ClonePhase.Unset, `the source VirtualMachineSnapshot ${source.name} does not exist`);
        return { requeueAfterMs: RECHECK_MS };
      }
      if (!status.restoreName)
        return fail(clone, `the snapshot ${snapshotName ?? ""} was deleted before the clone was made`);
    }

    if (!status.restoreName) {
      if (!snapshot) return undefined;
      if (snapshot.status?.phase === SnapshotPhase.Failed)
        return fail(
          clone,
          `the snapshot ${snapshotName ?? ""} failed: ${snapshot.status.error?.message ?? "see its events"}`,
        );
      if (snapshot.status?.readyToUse !== true) {
        await step(clone, ClonePhase.SnapshotInProgress, `Waiting for snapshot ${snapshotName ?? ""} to be ready`);
        return undefined;
      }
      const content = contents.get(`${ns}/${snapshot.status.virtualMachineSnapshotContentName ?? ""}`);
      const vm = content?.spec.source.virtualMachine;
      if (!vm) return { requeueAfterMs: RECHECK_MS };
      const vmName = vm.metadata?.name ?? snapshot.spec.source.name;
      const made = restores.get(`${ns}/${cloneRestoreName(clone)}`);
      if (!made) {
        const patches = clonePatches(clone, vm);
        if (typeof patches === "string") return fail(clone, patches);
        const taken = targetName(clone, vmName);
        if (vms.get(`${ns}/${taken}`)) return fail(clone, targetTaken(taken));
        const restore = cloneRestore(clone, snapshot.metadata.name ?? "", vmName, patches);
        await create(kubevirtResources.virtualMachineRestores, restore);
        recorder.record(clone, "Normal", Reason.RestoreCreated, `Created restore ${restore.metadata.name ?? ""}`);
      }
      const restoreName = cloneRestoreName(clone);
      await step(clone, ClonePhase.RestoreInProgress, `Restoring snapshot ${snapshotName ?? ""} to a new VM`, {
        restoreName,
        targetName: targetName(clone, vmName),
      });
      return undefined;
    }

    const restore =
      restores.get(`${ns}/${status.restoreName}`) ??
      (await client.find<VirtualMachineRestore>(kubevirtResources.virtualMachineRestores, ns, status.restoreName));
    if (!restore) return fail(clone, `the restore ${status.restoreName} was deleted before the clone was made`);
    if (!isOwnedBy(restore, clone)) return fail(clone, `the restore ${status.restoreName} is not this clone's`);
    if (restoreFailed(restore)) {
      const failure = restore.status?.conditions?.find((c) => c.type === SnapshotConditionType.Failure);
      return fail(clone, `the restore ${status.restoreName} failed: ${failure?.message ?? "see its events"}`);
    }
    if (!restoreComplete(restore)) {
      const progressing = restore.status?.conditions?.find((c) => c.type === SnapshotConditionType.Progressing);
      await step(clone, ClonePhase.RestoreInProgress, progressing?.message ?? "Restoring to a new VM");
      return undefined;
    }
    const target = vms.get(`${ns}/${restore.spec.target.name}`);
    if (!target || !restoredBy(restore, target)) {
      await step(clone, ClonePhase.CreatingTargetVM, `Waiting for the VM ${restore.spec.target.name}`);
      return { requeueAfterMs: RECHECK_MS };
    }
    recorder.record(clone, "Normal", Reason.TargetVMCreated, `Created VM ${restore.spec.target.name}`);
    await step(clone, ClonePhase.Succeeded, "Ready", {
      targetName: restore.spec.target.name,
      creationTime: kubeTime(now()),
    });
    return undefined;
  };
}

const targetTaken = (name: string) =>
  `spec.target.name: a VirtualMachine ${name} already exists; a clone makes a new VM: name another, or delete that one`;

const isOwnedBy = (o: KubeObject, clone: VirtualMachineClone) =>
  (o.metadata.ownerReferences ?? []).some((r) => r.uid === clone.metadata.uid);
