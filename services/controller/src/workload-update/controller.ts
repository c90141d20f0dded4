import {
  type ControllerManager,
  type EventRecorder,
  Expectations,
  type Informer,
  type KubeClient,
  type Pod,
  isNotFound,
  keyOf,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  Annotation,
  KUBEVIRT_CR_NAME,
  type KubeVirt,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_PODS_BY_VMI, isLauncherPodOf, launcherPodsKeyOf } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import { WORKLOAD_UPDATE_GENERATE_NAME, newMigration } from "@kubevirt-ts/vm-rules";
import { WORKLOAD_UPDATE_RECHECK_MS, isOutdated, planWorkloadUpdate } from "./decide.ts";

// The workload updater in the leading virt-controller, KubeVirt's: one reconcile of the KubeVirt CR counts the
// outdated VMIs into its status and moves them as decide.ts plans, looking again every 30 s while some are left. It
// is woken by the CR, by a VMI whose outdated label comes or goes, and by its own migrations' changes.

/** KubeVirt's event reasons. */
const Reason = {
  SuccessfulCreate: "SuccessfulCreate",
  FailedCreate: "FailedCreate",
  SuccessfulEvict: "SuccessfulEvict",
  FailedEvict: "FailedEvict",
} as const;

export interface WorkloadUpdateDeps {
  client: KubeClient;
  /** The release namespace, where the CR is. */
  namespace: string;
  vmis: Informer<VirtualMachineInstance>;
  migrations: Informer<VirtualMachineInstanceMigration>;
  /** The launcher pods, indexed LAUNCHER_PODS_BY_VMI. */
  pods: Informer<Pod>;
  recorder: EventRecorder;
  parallelMigrations: () => number;
  log: Logger;
  now: () => Date;
}

/** The launcher pod the VMI runs in now: its pod on the VMI's node. */
function currentPod(pods: Informer<Pod>, vmi: VirtualMachineInstance): Pod | undefined {
  return pods
    .byIndex(LAUNCHER_PODS_BY_VMI, launcherPodsKeyOf(vmi))
    .find((p) => isLauncherPodOf(p, vmi) && !p.metadata.deletionTimestamp && p.spec?.nodeName === vmi.status?.nodeName);
}

export function registerWorkloadUpdater(
  manager: ControllerManager,
  kvs: Informer<KubeVirt>,
  deps: WorkloadUpdateDeps,
): void {
  const { client, vmis, migrations, recorder, log } = deps;
  const queue = manager.queue("workload-updater");
  const key = `${deps.namespace}/${KUBEVIRT_CR_NAME}`;
  const expectations = new Expectations();
  const wake = () => {
    queue.add(key);
  };
  kvs.addHandler({ add: wake, update: wake, delete: wake });
  vmis.addHandler({
    add: (vmi) => {
      if (isOutdated(vmi)) wake();
    },
    // Only a change of the mark wakes it: an outdated VMI's every status write would otherwise walk all VMIs again;
    // what else changes (a VMI that becomes migratable) the 30 s look finds.
    update: (before, vmi) => {
      if (isOutdated(before) !== isOutdated(vmi)) wake();
    },
    delete: (vmi) => {
      if (isOutdated(vmi)) wake();
    },
  });
  const ours = (m: VirtualMachineInstanceMigration) =>
    m.metadata.annotations?.[Annotation.WorkloadUpdateMigration] !== undefined;
  migrations.addHandler({
    add: (m) => {
      if (!ours(m)) return;
      expectations.creationObserved(key);
      wake();
    },
    update: (_, m) => {
      if (ours(m)) wake();
    },
    delete: (m) => {
      if (ours(m)) wake();
    },
  });

  async function migrate(vmi: VirtualMachineInstance): Promise<void> {
    const migration = newMigration(
      vmi.metadata.namespace ?? "",
      vmi.metadata.name ?? "",
      WORKLOAD_UPDATE_GENERATE_NAME,
      { annotations: { [Annotation.WorkloadUpdateMigration]: "" } },
    );
    try {
      const created = await client.create(
        kubevirtResources.virtualMachineInstanceMigrations,
        vmi.metadata.namespace,
        migration,
      );
      recorder.record(
        vmi,
        "Normal",
        Reason.SuccessfulCreate,
        `Created Migration ${created.metadata.name ?? ""} for automated workload update`,
      );
    } catch (error) {
      expectations.creationObserved(key);
      recorder.record(
        vmi,
        "Warning",
        Reason.FailedCreate,
        `Error creating a Migration for automated workload update: ${String(error)}`,
      );
      log.warn("a workload update migration could not be created", { vmi: keyOf(vmi), error: String(error) });
    }
  }

  async function evict(vmi: VirtualMachineInstance): Promise<void> {
    const pod = currentPod(deps.pods, vmi);
    if (!pod) return;
    try {
      await client.evict(pod.metadata.namespace ?? "", pod.metadata.name ?? "");
      recorder.record(
        vmi,
        "Normal",
        Reason.SuccessfulEvict,
        `Initiated eviction of VMI as part of automated workload update: pod ${pod.metadata.name ?? ""}`,
      );
    } catch (error) {
      if (isNotFound(error)) return;
      // A disruption budget that holds the pod answers 429: the next batch tries again.
      recorder.record(
        vmi,
        "Warning",
        Reason.FailedEvict,
        `Error evicting the VMI's pod during automated workload update: ${String(error)}`,
      );
    }
  }

  let lastEvictionBatch: Date | undefined;
  manager.controller({
    name: "workload-updater",
    primary: kvs,
    queue,
    workers: 1,
    reconcile: async (k) => {
      const kv = kvs.get(k);
      if (!kv) {
        expectations.deleteExpectations(k);
        return undefined;
      }
      // As KubeVirt's: nothing is moved until the installation is deployed, nor twice for one migration not seen yet.
      if (kv.status?.phase !== "Deployed" || !expectations.satisfied(k))
        return { requeueAfterMs: WORKLOAD_UPDATE_RECHECK_MS };
      const now = deps.now();
      const plan = planWorkloadUpdate({
        strategy: kv.spec.workloadUpdateStrategy,
        vmis: vmis.list(),
        migrations: migrations.list(),
        parallelMigrations: deps.parallelMigrations(),
        lastEvictionBatch,
        now,
      });
      await writeStatusIfChanged(client, kubevirtResources.kubeVirts, kv, {
        ...kv.status,
        outdatedVirtualMachineInstanceWorkloads: plan.outdated,
      });
      expectations.expectCreations(k, plan.migrate.length);
      await Promise.all(plan.migrate.map(migrate));
      if (plan.evict.length > 0) {
        lastEvictionBatch = now;
        await Promise.all(plan.evict.map(evict));
      }
      return plan.pending ? { requeueAfterMs: WORKLOAD_UPDATE_RECHECK_MS } : undefined;
    },
  });
}
