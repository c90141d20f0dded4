import type { EventRecorder, Expectations, Informer, KubeClient, Reconcile } from "@kubevirt-ts/kube";
import {
  Annotation,
  type EvictionStrategy,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import {
  EVACUATION_GENERATE_NAME,
  evictionStrategyOf,
  isFinalMigrationPhase,
  isLiveMigratable,
  isMigrating,
  newMigration,
} from "@kubevirt-ts/vm-rules";

// KubeVirt's evacuation controller: a VMI whose launcher pod's eviction was
// asked for (virt-api's eviction webhook wrote status.evacuationNodeName, its
// node) and whose eviction strategy migrates it gets a migration, named
// kubevirt-evacuation-…, unless one is going already, and after a backoff
// when the last ones failed, as KubeVirt's. The migration
// controller's limits queue it; once it completed, the VMI controller clears
// the mark and the source pod goes, which lets the drain through.

/** The index of migrations by the VMI they name: namespace/name. */
export const MIGRATIONS_BY_VMI = "vmi";
export const migrationsByVmi = (m: VirtualMachineInstanceMigration): string[] => [
  `${m.metadata.namespace ?? ""}/${m.spec.vmiName}`,
];

/**
 * KubeVirt's backoff between evacuation migrations of a VMI that keep failing: 20 s, doubled each time, at most 5 min.
 */
const BACKOFF_FIRST_MS = 20_000;
const BACKOFF_MAX_MS = 5 * 60_000;

/**
 * How long the VMI's next evacuation migration waits, from its migrations (any order): after n failed ones in a row
 * (the newest first), 20 s × 2^(n-1) from the end of the last; 0 when none failed last or the wait is over.
 */
export function evacuationBackoffMs(migrations: readonly VirtualMachineInstanceMigration[], now: Date): number {
  const newestFirst = [...migrations].sort((a, b) =>
    (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? ""),
  );
  const failed = newestFirst.findIndex((m) => m.status?.phase !== "Failed");
  const streak = failed === -1 ? newestFirst.length : failed;
  if (streak === 0) return 0;
  const ended = newestFirst[0]?.status?.phaseTransitionTimestamps?.at(-1)?.phaseTransitionTimestamp;
  const wait = Math.min(BACKOFF_FIRST_MS * 2 ** (streak - 1), BACKOFF_MAX_MS);
  return Math.max(0, (ended ? new Date(ended).getTime() : 0) + wait - now.getTime());
}

export interface EvacuationDeps {
  client: KubeClient;
  vmis: Informer<VirtualMachineInstance>;
  migrations: Informer<VirtualMachineInstanceMigration>;
  expectations: Expectations;
  recorder: EventRecorder;
  /** The cluster's eviction strategy now (the KubeVirt CR's or the chart's), for VMIs that name none. */
  evictionStrategy: () => EvictionStrategy;
  now: () => Date;
}

/**
 * Whether the VMI is to be moved off its node now. Not while it moves: in particular not between its migration's
 * completion and the VMI controller's move of it to the target node, when its migration is already Succeeded and
 * status.nodeName still names the node it left (a second migration made then would take it on from its new node).
 */
export function needsEvacuation(vmi: VirtualMachineInstance, clusterDefault: EvictionStrategy): boolean {
  const node = vmi.status?.nodeName;
  const strategy = evictionStrategyOf(vmi, clusterDefault);
  return (
    node !== undefined &&
    vmi.status?.evacuationNodeName === node &&
    !vmi.metadata.deletionTimestamp &&
    vmi.status.phase === "Running" &&
    !isMigrating(vmi) &&
    isLiveMigratable(vmi) &&
    (strategy === "LiveMigrate" || strategy === "LiveMigrateIfPossible")
  );
}

export function createEvacuationReconciler(deps: EvacuationDeps): Reconcile {
  const { client, vmis, migrations, expectations, recorder } = deps;
  return async (key) => {
    const vmi = vmis.get(key);
    if (!vmi) {
      expectations.deleteExpectations(key);
      return undefined;
    }
    if (!expectations.satisfied(key) || !needsEvacuation(vmi, deps.evictionStrategy())) return undefined;
    const previous = migrations.byIndex(MIGRATIONS_BY_VMI, key);
    if (previous.some((m) => !isFinalMigrationPhase(m.status?.phase) && !m.metadata.deletionTimestamp))
      return undefined;
    const backoff = evacuationBackoffMs(previous, deps.now());
    if (backoff > 0) {
      recorder.record(
        vmi,
        "Normal",
        "MigrationBackoff",
        `The VMI's last migration failed: its evacuation tries again in ${String(Math.ceil(backoff / 1000))} s`,
      );
      return { requeueAfterMs: backoff };
    }
    const node = vmi.status?.nodeName ?? "";
    const migration = newMigration(vmi.metadata.namespace ?? "", vmi.metadata.name ?? "", EVACUATION_GENERATE_NAME, {
      annotations: { [Annotation.EvacuationMigration]: node },
    });
    expectations.expectCreations(key, 1);
    try {
      const created = await client.create(
        kubevirtResources.virtualMachineInstanceMigrations,
        vmi.metadata.namespace,
        migration,
      );
      recorder.record(
        vmi,
        "Normal",
        "SuccessfulCreate",
        `Created migration ${created.metadata.name ?? ""} to move the VMI off ` +
          `node ${node}, whose drain asked for its eviction`,
      );
    } catch (error) {
      expectations.creationObserved(key);
      throw error;
    }
    return undefined;
  };
}
