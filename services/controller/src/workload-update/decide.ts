import {
  type KubeVirt,
  Label,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
} from "@kubevirt-ts/kubevirt-api";
import { isFinalMigrationPhase, isLiveMigratable, isMigrating, parseDurationSeconds } from "@kubevirt-ts/vm-rules";

// KubeVirt's workload updater, decided from what is observed alone: after an upgrade, the running VMIs left in the
// launcher of the earlier release (the VMI controller labels them kubevirt.io/outdatedLauncherImage) are moved onto
// the installed launcher as the KubeVirt CR's workloadUpdateStrategy says: LiveMigrate migrates those that can move,
// no more at once than the cluster's parallel migrations leave room for; Evict evicts the others' launcher pods, at
// most batchEvictionSize per batchEvictionInterval (their VM starts them again in the new launcher). With no method,
// they are only counted and labelled.

/** KubeVirt's defaults of the strategy's batch. */
export const DEFAULT_BATCH_EVICTION_SIZE = 10;
export const DEFAULT_BATCH_EVICTION_INTERVAL_MS = 60_000;
/** How often the updater looks again while outdated VMIs are left (KubeVirt's 30 s). */
export const WORKLOAD_UPDATE_RECHECK_MS = 30_000;

export type WorkloadUpdateStrategy = NonNullable<KubeVirt["spec"]["workloadUpdateStrategy"]>;

export interface WorkloadUpdateInput {
  strategy: WorkloadUpdateStrategy | undefined;
  vmis: readonly VirtualMachineInstance[];
  migrations: readonly VirtualMachineInstanceMigration[];
  /** The cluster's parallelMigrationsPerCluster now. */
  parallelMigrations: number;
  /** When the last batch of evictions went out; undefined if none has. */
  lastEvictionBatch: Date | undefined;
  now: Date;
}

export interface WorkloadUpdatePlan {
  /** The running VMIs left in an outdated launcher: KubeVirt's outdatedVirtualMachineInstanceWorkloads. */
  outdated: number;
  /** The VMIs to migrate now. */
  migrate: VirtualMachineInstance[];
  /** The VMIs whose launcher pod is evicted now (a new batch when non-empty). */
  evict: VirtualMachineInstance[];
  /** Whether outdated VMIs are left for the next look to act on. */
  pending: boolean;
}

export const isOutdated = (vmi: VirtualMachineInstance): boolean =>
  vmi.metadata.labels?.[Label.OutdatedLauncherImage] !== undefined;

const keyOfVmi = (vmi: VirtualMachineInstance) => `${vmi.metadata.namespace ?? ""}/${vmi.metadata.name ?? ""}`;

/** The strategy's interval between eviction batches, in ms. */
export function batchIntervalMs(strategy: WorkloadUpdateStrategy | undefined): number {
  const text = strategy?.batchEvictionInterval;
  const seconds = text === undefined ? undefined : parseDurationSeconds(text);
  return seconds === undefined ? DEFAULT_BATCH_EVICTION_INTERVAL_MS : seconds * 1000;
}

export function planWorkloadUpdate(input: WorkloadUpdateInput): WorkloadUpdatePlan {
  const methods = new Set(input.strategy?.workloadUpdateMethods ?? []);
  const unfinished = input.migrations.filter((m) => !isFinalMigrationPhase(m.status?.phase));
  const moving = new Set(unfinished.map((m) => `${m.metadata.namespace ?? ""}/${m.spec.vmiName}`));
  // The running VMIs, oldest name first so that each look takes them in the same order.
  const outdated = input.vmis
    .filter((v) => v.status?.phase === "Running" && !v.metadata.deletionTimestamp && isOutdated(v))
    .sort((a, b) => keyOfVmi(a).localeCompare(keyOfVmi(b)));
  const migratable: VirtualMachineInstance[] = [];
  const evictable: VirtualMachineInstance[] = [];
  for (const vmi of outdated) {
    // One that moves already (a user's migration or ours) is counted, and acted on no further.
    if (isMigrating(vmi) || moving.has(keyOfVmi(vmi))) continue;
    if (methods.has("LiveMigrate") && isLiveMigratable(vmi)) migratable.push(vmi);
    else if (methods.has("Evict")) evictable.push(vmi);
  }
  // A best effort not to queue migrations the migration controller could not run now: it still enforces its limits.
  const room = Math.max(0, input.parallelMigrations - unfinished.length);
  const batchDue =
    input.lastEvictionBatch === undefined ||
    input.now.getTime() >= input.lastEvictionBatch.getTime() + batchIntervalMs(input.strategy);
  const batch = batchDue ? (input.strategy?.batchEvictionSize ?? DEFAULT_BATCH_EVICTION_SIZE) : 0;
  return {
    outdated: outdated.length,
    migrate: migratable.slice(0, room),
    evict: evictable.slice(0, batch),
    pending: migratable.length > 0 || evictable.length > 0,
  };
}
