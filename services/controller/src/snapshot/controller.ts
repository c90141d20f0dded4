import {
  ApiError,
  type ControllerManager,
  type EventHandler,
  type EventRecorder,
  type Informer,
  type KubeClient,
  type KubeObject,
  type PersistentVolumeClaim,
  type Pod,
  type Reconcile,
  type WorkQueue,
  addFinalizer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  keyOf,
  removeFinalizer,
  resources,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  SUBRESOURCE_GROUP,
  SnapshotKind,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  controllerRef,
  kubevirtResources,
  parseQuantity,
} from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { SNAPSHOT_IN_PROGRESS } from "@kubevirt-ts/vm-rules";
import {
  type ImporterConfig,
  claimCopyPod,
  cloneDiskBytes,
  claimCopyPodName,
  claimNode,
  importerPodMismatch,
} from "../datavolume/importer-pod.ts";
import {
  SNAPSHOT_FINALIZER,
  type SnapshotAction,
  decideSnapshot,
  failedStepStatus,
  isFinal,
  sourceInUse,
} from "./decide.ts";

// The VirtualMachineSnapshot controller (docs/adr/0027): it observes a snapshot, its VM and VMI, its content, the
// claims and the copy pods, lets decide.ts choose, and carries the actions out in order; the snapshot's status is
// written last, so that it never says more than what was done.

export interface SnapshotControllerDeps {
  client: KubeClient;
  snapshots: Informer<VirtualMachineSnapshot>;
  contents: Informer<VirtualMachineSnapshotContent>;
  vms: Informer<VirtualMachine>;
  vmis: Informer<VirtualMachineInstance>;
  claims: Informer<PersistentVolumeClaim>;
  /** Importer pods: the copy pods are importers of a clone (claimCopyPod). */
  pods: Informer<Pod>;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
  /** The importer the copy pods run; undefined where kubevirt-ts does not serve DataVolumes (no copies then). */
  importer: ImporterConfig | undefined;
}

/** virt-api's VMI subresources (freeze, unfreeze, pause, unpause), reached through the API server as KubeVirt's. */
const vmiSubresources = {
  group: SUBRESOURCE_GROUP,
  version: "v1",
  plural: "virtualmachineinstances",
  namespaced: true,
} as const;

/** The largest disk.img the source claim may hold (a launcher's fills it), which its copy must take as it is. */
function diskBytes(claim: PersistentVolumeClaim): number {
  const size = claim.status?.capacity?.storage ?? claim.spec?.resources?.requests?.storage ?? "0";
  return cloneDiskBytes(parseQuantity(size) ?? 0);
}

export function createSnapshotReconciler(deps: SnapshotControllerDeps): Reconcile {
  const { client, snapshots, contents, vms, vmis, claims, pods, importer } = deps;

  /** The cache's object, or the API server's when the cache has none yet (a write the informer has not seen). */
  const read = async <T extends KubeObject>(
    informer: Informer<T>,
    type: Parameters<KubeClient["find"]>[0],
    namespace: string,
    name: string,
  ): Promise<T | undefined> => informer.get(`${namespace}/${name}`) ?? client.find<T>(type, namespace, name);

  return async (key) => {
    const snapshot = snapshots.get(key);
    if (!snapshot) return undefined;
    const namespace = snapshot.metadata.namespace ?? "";
    const vmName = snapshot.spec.source.name;
    // A deleted snapshot lets go of the VM as the API server has it: a mark written just before is not in the cache.
    const vm = snapshot.metadata.deletionTimestamp
      ? await client.find<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vmName)
      : vms.get(`${namespace}/${vmName}`);
    const vmi = vmis.get(`${namespace}/${vmName}`);
    const contentName = snapshot.status?.virtualMachineSnapshotContentName;
    const content =
      contentName === undefined
        ? undefined
        : await read(contents, kubevirtResources.virtualMachineSnapshotContents, namespace, contentName);
    const targets = (content?.spec.volumeBackups ?? []).map((b) => b.volumeSnapshotName ?? "");
    // The copy pods from the cache alone: one made but not seen yet is made again, and AlreadyExists says it is there.
    const found = new Map<string, Pod | undefined>(
      targets.map((target) => [target, pods.get(`${namespace}/${claimCopyPodName(target)}`)]),
    );
    // Whether the copy pods read a disk open by the running guest: so from the snapshot's start (its indications).
    const inUse = sourceInUse(snapshot.status?.indications);
    const expected = (target: string) => {
      const backup = content?.spec.volumeBackups?.find((b) => b.volumeSnapshotName === target);
      const source = claims.get(`${namespace}/${backup?.persistentVolumeClaim.metadata?.name ?? ""}`);
      return content && source && importer ? copyPodFor(importer, content, target, source, inUse) : undefined;
    };
    /** Why the pod in a copy pod's place is not one the controller made, if it is not (importerPodMismatch). */
    const mismatch = (target: string) => {
      const pod = found.get(target);
      const want = expected(target);
      return pod && want ? importerPodMismatch(pod, want) : undefined;
    };
    const decision = decideSnapshot({
      snapshot,
      vm,
      vmi,
      content,
      claim: (name) => claims.get(`${namespace}/${name}`),
      copyPod: (target) => (mismatch(target) === undefined ? found.get(target) : undefined),
      foreignPod: (target) => mismatch(target),
      copier: importer !== undefined,
      now: deps.now(),
    });

    function copyPodFor(
      config: ImporterConfig,
      c: VirtualMachineSnapshotContent,
      target: string,
      source: PersistentVolumeClaim,
      sourceInUse: boolean,
    ): Pod {
      return claimCopyPod(
        {
          target,
          namespace,
          source: source.metadata.name ?? "",
          diskBytes: diskBytes(source),
          owner: controllerRef(c),
          node: claimNode(source),
          inUse: sourceInUse,
        },
        config,
      );
    }

    let current = snapshot;
    // Once the finalizer is removed the snapshot may be gone: no status is written then.
    const done = { removed: false };
    const run = async (action: SnapshotAction): Promise<void> => {
      switch (action.kind) {
        case "addFinalizer":
          current = await addFinalizer(client, kubevirtResources.virtualMachineSnapshots, current, SNAPSHOT_FINALIZER);
          return;
        case "removeFinalizer":
          await removeFinalizer(client, kubevirtResources.virtualMachineSnapshots, current, SNAPSHOT_FINALIZER);
          done.removed = true;
          return;
        case "markVm":
          try {
            await client.patch(
              kubevirtResources.virtualMachines,
              namespace,
              vmName,
              markPatch(action),
              "json",
              "status",
            );
          } catch (error) {
            // A test failed: the VM is marked by another snapshot or a restore, or no longer by this one. The VM's
            // change brings the snapshot back to wait for it (or finds it let go already).
            if (!isTestFailed(error)) throw error;
          }
          return;
        case "createContent":
          await ignoreExisting(
            client.create(kubevirtResources.virtualMachineSnapshotContents, namespace, action.content),
          );
          return;
        case "quiesce":
          await client.update(
            vmiSubresources,
            {
              metadata: { namespace, name: vmName },
              ...(action.how === "freeze" ? { unfreezeTimeout: action.unfreezeTimeout } : {}),
            },
            action.how,
          );
          return;
        case "release":
          try {
            await client.update(
              vmiSubresources,
              { metadata: { namespace, name: vmName } },
              action.how === "freeze" ? "unfreeze" : "unpause",
            );
          } catch (error) {
            // Gone with its VMI, or not paused or frozen (409): released already. Anything else is tried again, the
            // snapshot kept from its final phase meanwhile (a guest left paused is worse than a retry), and so is the
            // 409 of an unpause refused while a snapshot marks the VM (another that marked it since).
            const held = error instanceof ApiError && (error.status.message ?? "").includes(SNAPSHOT_IN_PROGRESS);
            if ((!isNotFound(error) && !isConflict(error)) || held) throw error;
          }
          return;
        case "createCopyClaim":
          await ignoreExisting(client.create(resources.persistentVolumeClaims, namespace, action.claim));
          return;
        case "createCopyPod": {
          const source = claims.get(`${namespace}/${action.source}`);
          if (!content || !source || !importer) return;
          await ignoreExisting(
            client.create(
              resources.pods,
              namespace,
              copyPodFor(importer, content, action.target, source, action.inUse),
            ),
          );
          return;
        }
        case "deleteCopyPod":
          try {
            await client.delete(resources.pods, namespace, claimCopyPodName(action.name));
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
          return;
        case "writeContentStatus":
          if (content)
            await writeStatusIfChanged(
              client,
              kubevirtResources.virtualMachineSnapshotContents,
              content,
              action.status,
            );
          return;
      }
    };
    for (const action of decision.actions) {
      try {
        await run(action);
      } catch (error) {
        // As KubeVirt's: the snapshot says what failed (its error), and the step is tried again with back-off.
        if (!isConflict(error) && !done.removed) {
          const status = failedStepStatus(current, action, error, deps.now());
          await writeStatusIfChanged(client, kubevirtResources.virtualMachineSnapshots, current, status).catch(
            () => undefined,
          );
        }
        throw error;
      }
    }
    if (!done.removed)
      await writeStatusIfChanged(client, kubevirtResources.virtualMachineSnapshots, current, decision.status);
    return decision.requeueAfterMs === undefined
      ? undefined
      : { requeueAfterMs: Math.max(1000, decision.requeueAfterMs) };
  };
}

/**
 * The JSON patch that marks the VM for the snapshot, or lifts the snapshot's mark, only if the VM's status still is as
 * it must be for that: no snapshot nor restore under way to mark it, this snapshot's mark to lift it.
 */
export function markPatch(action: Extract<SnapshotAction, { kind: "markVm" }>): object[] {
  if (action.snapshot === null)
    return [
      { op: "test", path: "/status/snapshotInProgress", value: action.vm.status?.snapshotInProgress },
      { op: "remove", path: "/status/snapshotInProgress" },
    ];
  // A test of null passes for a member that is absent; a status that is absent is added whole.
  if (action.vm.status === undefined)
    return [
      { op: "test", path: "/status", value: null },
      { op: "add", path: "/status", value: { snapshotInProgress: action.snapshot } },
    ];
  return [
    { op: "test", path: "/status/snapshotInProgress", value: null },
    { op: "test", path: "/status/restoreInProgress", value: null },
    { op: "add", path: "/status/snapshotInProgress", value: action.snapshot },
  ];
}

/** The API server's answer to a JSON patch whose test failed (or whose path is missing): 422. */
const isTestFailed = (error: unknown): boolean => error instanceof ApiError && error.code === 422;

async function ignoreExisting(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

/** The index of snapshots by their source VM, namespace/name: give it to the snapshots' informer (snapshotIndexers). */
export const SNAPSHOTS_BY_VM = "vm";
export const snapshotIndexers = {
  [SNAPSHOTS_BY_VM]: (s: VirtualMachineSnapshot) => [`${s.metadata.namespace ?? ""}/${s.spec.source.name}`],
};

/**
 * Enqueues the snapshots whose source VM is the object's namespace/name (the VM's, or its VMI's): those under way, and
 * a finished one only while the VM still carries its mark (`marks`), which it lifts. A finished snapshot being deleted
 * looks again on its own change.
 */
function enqueueSnapshotsOf<T extends KubeObject>(
  queue: WorkQueue,
  snapshots: Informer<VirtualMachineSnapshot>,
  marks: (o: T) => string | undefined = () => undefined,
): EventHandler<T> {
  const enqueue = (o: T) => {
    for (const s of snapshots.byIndex(SNAPSHOTS_BY_VM, keyOf(o)))
      if (!isFinal(s) || marks(o) === s.metadata.name) queue.add(keyOf(s));
  };
  return {
    add: enqueue,
    update: (_, o) => {
      enqueue(o);
    },
    delete: enqueue,
  };
}

/**
 * Registers the snapshot controller with the manager, on informers the caller made (the snapshots' with
 * snapshotIndexers; the pods', of importers, `kubevirt.io=importer`): a snapshot looks again when it, its content,
 * its copy pods, or its VM or VMI changes.
 */
export function registerSnapshotController(
  manager: ControllerManager,
  deps: SnapshotControllerDeps & { workers: number },
): void {
  const { snapshots, contents } = deps;
  const queue = manager.queue("virtualmachinesnapshots");
  const enqueue = (key: string | undefined) => {
    if (key !== undefined) queue.add(key);
  };
  const snapshotOfContent = (c: VirtualMachineSnapshotContent | undefined) =>
    c?.spec.virtualMachineSnapshotName === undefined
      ? undefined
      : `${c.metadata.namespace ?? ""}/${c.spec.virtualMachineSnapshotName}`;
  const podOwner = (p: Pod) => {
    const ref = p.metadata.ownerReferences?.find(
      (r) => r.controller === true && r.kind === SnapshotKind.VirtualMachineSnapshotContent,
    );
    return ref ? snapshotOfContent(contents.get(`${p.metadata.namespace ?? ""}/${ref.name}`)) : undefined;
  };
  const handler = <T extends KubeObject>(key: (o: T) => string | undefined): EventHandler<T> => ({
    add: (o) => {
      enqueue(key(o));
    },
    update: (_, o) => {
      enqueue(key(o));
    },
    delete: (o) => {
      enqueue(key(o));
    },
  });
  snapshots.addHandler(handler<VirtualMachineSnapshot>(keyOf));
  contents.addHandler(handler<VirtualMachineSnapshotContent>(snapshotOfContent));
  deps.pods.addHandler(handler<Pod>(podOwner));
  deps.vms.addHandler(enqueueSnapshotsOf<VirtualMachine>(queue, snapshots, (vm) => vm.status?.snapshotInProgress));
  deps.vmis.addHandler(enqueueSnapshotsOf<VirtualMachineInstance>(queue, snapshots));
  manager.controller({
    name: "snapshot",
    primary: snapshots,
    queue,
    workers: deps.workers,
    reconcile: createSnapshotReconciler(deps),
  });
}
