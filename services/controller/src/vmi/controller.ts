import {
  EXPECTATIONS_RECHECK_MS,
  type EventRecorder,
  type Expectations,
  type Informer,
  type KubeClient,
  type PersistentVolumeClaim,
  type Pod,
  type Reconcile,
  WrittenVersions,
  addFinalizer,
  findCondition,
  isAlreadyExists,
  isNotFound,
  keyOf,
  removeFinalizer,
  resources,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  type ClaimObject,
  backendStorageClaimName,
  needsBackendStorage,
  isFinalPhase,
  isMigrating,
  launcherPodRoles,
  needsDisruptionBudget,
} from "@kubevirt-ts/vm-rules";
import {
  type DataVolume,
  EventReason,
  Finalizer,
  Label,
  type VirtualMachineInstance,
  VmiConditionType,
  summarize,
  validateVirtualMachineInstance,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_PODS_BY_VMI, isLauncherPodOf, launcherPodsKeyOf } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";

import { claimsOf, dataVolumesOf } from "./claim-events.ts";
import { type VmiAction, type VmiObservation, decideVmi, deriveVmiStatus, isOutdatedLauncher } from "./decide.ts";
import { backendStorageClaim, backendStorageClass } from "./backend-storage.ts";
import { launcherDisruptionBudget } from "./disruption-budget.ts";
import { type LauncherPodConfig, launcherDeletionGrace, launcherPod } from "./pod.ts";

// The VirtualMachineInstance controller: one launcher pod per VMI, the phases
// up to Scheduled (when the pod runs and the launcher is ready, the VMI gets
// its node and the handler there takes over), failure when the pod fails or
// disappears, and the pod's removal when the VMI goes.

export interface VmiControllerDeps {
  client: KubeClient;
  vmis: Informer<VirtualMachineInstance>;
  /** Launcher pods, indexed (LAUNCHER_PODS_BY_VMI) by the VMI that owns them. */
  pods: Informer<Pod>;
  /** PersistentVolumeClaims, all of them in the namespaces watched. */
  claims: Informer<PersistentVolumeClaim>;
  /** DataVolumes, where the cluster serves the kind (CDI's, or kubevirt-ts's own); undefined where it does not. */
  dataVolumes: Informer<DataVolume> | undefined;
  expectations: Expectations;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
  /** The launcher pod's configuration now (it follows the KubeVirt CR). */
  pod: () => LauncherPodConfig;
  /**
   * The StorageClass of VMs' backend-storage claims now (the CR's or the chart's vmStateStorageClass); unset,
   * KubeVirt's rule picks one.
   */
  vmStateStorageClass?: () => string | undefined;
}

export function createVmiReconciler(deps: VmiControllerDeps): Reconcile {
  const { client, vmis, pods, expectations, recorder, log, now } = deps;

  /**
   * The VMI's PodDisruptionBudget, when its eviction strategy asks for one: made before its pod, and once more for each
   * VMI this controller process first sees with a pod (one made before the budget existed, or before a restart with
   * another cluster strategy). What was made once is not asked for again, so a reconcile costs no request for it.
   */
  const budgeted = new Set<string>();
  async function ensureDisruptionBudget(vmi: VirtualMachineInstance): Promise<void> {
    const uid = vmi.metadata.uid ?? "";
    if (budgeted.has(uid) || !needsDisruptionBudget(vmi, deps.pod().evictionStrategy)) return;
    await client
      .create(resources.podDisruptionBudgets, vmi.metadata.namespace, launcherDisruptionBudget(vmi))
      .catch((error: unknown) => {
        if (!isAlreadyExists(error)) throw error;
      });
    budgeted.add(uid);
  }

  /**
   * The VM's backend-storage claim, when its VMI keeps EFI variables or TPM state: made before the pod that mounts it,
   * and left alone when it is there (a VM's next VMI finds the state of the last).
   */
  async function ensureBackendStorage(
    vmi: VirtualMachineInstance,
    claims: ReadonlyMap<string, ClaimObject>,
  ): Promise<void> {
    if (!needsBackendStorage(vmi.spec)) return;
    const name = backendStorageClaimName(vmi);
    if (deps.claims.get(`${vmi.metadata.namespace ?? ""}/${name}`)) return;
    const claim = backendStorageClaim(vmi, backendStorageClass(vmi, claims, deps.vmStateStorageClass?.()));
    await client.create(resources.persistentVolumeClaims, vmi.metadata.namespace, claim).then(
      () => {
        recorder.record(
          vmi,
          "Normal",
          EventReason.SuccessfulCreate,
          `Created the backend-storage claim ${name} for the VM's EFI variables and TPM state`,
        );
      },
      (error: unknown) => {
        if (!isAlreadyExists(error)) throw error;
      },
    );
  }

  /** Carries the action out; a pod it created is returned, so that the status written next already says Scheduling. */
  async function execute(o: VmiObservation, action: VmiAction, key: string): Promise<Pod | undefined> {
    const { vmi } = o;
    if (action.kind === "createPod") {
      // The budget first: a pod that must not be evicted is never without it; the state claim before the pod that
      // mounts it.
      await ensureDisruptionBudget(vmi);
      await ensureBackendStorage(vmi, o.claims);
      expectations.expectCreations(key, 1);
      try {
        const pod = await client.create<Pod>(
          resources.pods,
          vmi.metadata.namespace,
          launcherPod(vmi, deps.pod(), o.claims),
        );
        recorder.record(
          vmi,
          "Normal",
          EventReason.SuccessfulCreate,
          `Created virtual machine pod ${pod.metadata.name ?? ""}`,
        );
        return pod;
      } catch (error) {
        expectations.creationObserved(key);
        recorder.record(vmi, "Warning", EventReason.FailedCreate, `Error creating pod: ${String(error)}`);
        throw error;
      }
    } else if (action.kind === "deletePods") {
      for (const pod of action.pods) {
        expectations.expectDeletions(key, 1);
        try {
          const grace = launcherDeletionGrace(vmi, pod);
          await client.delete(resources.pods, pod.metadata.namespace, pod.metadata.name ?? "", {
            uid: pod.metadata.uid,
            ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
          });
          recorder.record(
            vmi,
            "Normal",
            EventReason.SuccessfulDelete,
            `Deleted virtual machine pod ${pod.metadata.name ?? ""}`,
          );
        } catch (error) {
          expectations.deletionObserved(key);
          if (!isNotFound(error)) throw error;
        }
      }
    }
    return undefined;
  }

  const written = new WrittenVersions();
  return async (key) => {
    const cached = vmis.get(key);
    if (!cached) {
      expectations.deleteExpectations(key);
      written.forget(key);
      return undefined;
    }
    if (isFinalPhase(cached.status?.phase) || cached.metadata.deletionTimestamp)
      budgeted.delete(cached.metadata.uid ?? "");
    // Our own last write has not reached the cache yet: its watch event brings the VMI back here.
    if (written.isStale(key, cached.metadata.resourceVersion)) return undefined;
    // A pod created with generateName may not be in the cache yet: deciding now could create a second one.
    if (!expectations.satisfied(key)) return { requeueAfterMs: EXPECTATIONS_RECHECK_MS };
    // Only the pods this VMI controls: a pod that merely carries its uid in a label never counts, nor blocks its
    // deletion.
    const owned = pods
      .byIndex(LAUNCHER_PODS_BY_VMI, launcherPodsKeyOf(cached))
      .filter((p) => isLauncherPodOf(p, cached))
      .sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""));

    if (cached.metadata.deletionTimestamp) {
      const observation = { vmi: cached, pods: owned, invalid: undefined, claims: new Map(), now: now() };
      await execute(observation, decideVmi(observation), key);
      if (owned.length === 0)
        await removeFinalizer(client, kubevirtResources.virtualMachineInstances, cached, Finalizer.VmiController);
      return undefined;
    }
    // The finalizer holds a VMI until its launcher pods are gone: a finished VMI without them lets it go before it is
    // deleted, as KubeVirt's controller does, so deleting it (or its namespace, after the pods) takes no second pass.
    const vmi =
      isFinalPhase(cached.status?.phase) && owned.length === 0
        ? await removeFinalizer(client, kubevirtResources.virtualMachineInstances, cached, Finalizer.VmiController)
        : await addFinalizer(client, kubevirtResources.virtualMachineInstances, cached, Finalizer.VmiController);
    const validation = validateVirtualMachineInstance(vmi);
    const invalid = validation.ok ? undefined : summarize(validation.causes);
    if (
      invalid !== undefined &&
      findCondition(vmi.status?.conditions, VmiConditionType.Synchronized)?.reason !== "InvalidSpec"
    ) {
      recorder.record(vmi, "Warning", EventReason.InvalidSpec, invalid);
      log.warn("the VMI's spec is invalid; waiting for it to change", { vmi: keyOf(vmi), causes: invalid });
    }
    if (owned.length > 0 && !isFinalPhase(vmi.status?.phase)) await ensureDisruptionBudget(vmi);
    const dataVolumes = dataVolumesOf(vmi.metadata.namespace, vmi.spec, deps.dataVolumes);
    // A migration's target pod is the migration controller's until the migration completed (migration.ts).
    const roles = launcherPodRoles(vmi, owned);
    const observation = {
      vmi,
      pods: roles.current,
      left: roles.left,
      invalid,
      claims: claimsOf(vmi, deps.claims),
      dataVolumes,
      now: now(),
    };
    const created = await execute(observation, decideVmi(observation), key);
    const status = deriveVmiStatus(created ? { ...observation, pods: [created] } : observation);
    // The label lets the handler of the node watch its own VMIs only, as KubeVirt's does; it goes in the same write.
    // The migration target's node label goes once the VMI no longer moves (the migration controller puts it on).
    const labels = {
      ...(status.nodeName ? { [Label.NodeName]: status.nodeName } : {}),
      ...(vmi.metadata.labels?.[Label.MigrationTargetNodeName] !== undefined && !isMigrating({ status })
        ? { [Label.MigrationTargetNodeName]: undefined }
        : {}),
      // KubeVirt's mark of a VMI left in the launcher of an earlier release (the workload updater moves it).
      [Label.OutdatedLauncherImage]: isOutdatedLauncher(status, deps.pod().launcherImage) ? "" : undefined,
    };
    const updated = await writeStatusIfChanged(client, kubevirtResources.virtualMachineInstances, vmi, status, labels);
    await syncOutdatedMark(roles.current[0], labels[Label.OutdatedLauncherImage]);
    if (updated) written.wrote(key, cached.metadata.resourceVersion, vmi.metadata.resourceVersion);
    else if (vmi !== cached) written.wrote(key, cached.metadata.resourceVersion);
    if (updated && status.phase !== vmi.status?.phase) {
      recorder.record(
        vmi,
        "Normal",
        status.phase ?? "",
        `The VMI is ${status.phase ?? ""}` +
          `${status.nodeName && status.phase === "Scheduled" ? ` on node ${status.nodeName}` : ""}.`,
      );
    }
    return undefined;
  };

  /**
   * KubeVirt's outdated launcher mark (`outdated`, as the VMI has it), copied onto the VMI's running launcher pod (its
   * current one, not a migration's target), as KubeVirt keeps its dynamic labels on both.
   */
  async function syncOutdatedMark(pod: Pod | undefined, outdated: string | undefined): Promise<void> {
    if (!pod || pod.metadata.deletionTimestamp || pod.metadata.labels?.[Label.OutdatedLauncherImage] === outdated)
      return;
    const patch = { metadata: { labels: { [Label.OutdatedLauncherImage]: outdated ?? null } } };
    await client
      .patch(resources.pods, pod.metadata.namespace, pod.metadata.name ?? "", patch, "merge")
      .catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
  }
}
