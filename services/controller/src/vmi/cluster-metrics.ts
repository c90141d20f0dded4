import type { Informer } from "@kubevirt-ts/kube";
import {
  type EvictionStrategy,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  ConditionStatus,
  Label,
  VmiConditionType,
} from "@kubevirt-ts/kubevirt-api";
import { evictionStrategyOf } from "@kubevirt-ts/vm-rules";
import { Gauge, type Registry } from "prom-client";

// KubeVirt's virt-controller series that its alerts and dashboards read
// (the chart's prometheus-rules.yaml, ADR 29): this replica's readiness and
// leadership, and what the caches hold, counted at scrape time.
//
// Which replica reports what, as in KubeVirt v1.8: every replica reports
// its leading and ready status. KubeVirt registers the cache collectors in
// every replica but starts its informers only in the leader, so only the
// leader has objects to report. Our replicas keep warm caches, so the
// collectors ask whether this replica leads: a follower reports no VMI or
// migration series, and its migration counts are 0, as KubeVirt's are. A
// sum over replicas then counts each object once.

/**
 * A label value at most 63 characters long: guest agents write some of them. An absent value is "", as KubeVirt
 * v1.8 has it: Prometheus drops a label whose value is empty.
 */
const bounded = (value: string | undefined) => (value ?? "").slice(0, 63);

/**
 * KubeVirt's labels of kubevirt_vmi_phase_count. In KubeVirt v1.8 this is a recording rule that sums
 * kubevirt_vmi_info by these labels; we compute the sum here, as we do not export kubevirt_vmi_info.
 */
export const PHASE_COUNT_LABELS = [
  "node",
  "phase",
  "os",
  "workload",
  "flavor",
  "instance_type",
  "preference",
  "guest_os_kernel_release",
  "guest_os_machine",
  "guest_os_arch",
  "guest_os_name",
  "guest_os_version_id",
] as const;
export type PhaseCountLabels = Record<(typeof PHASE_COUNT_LABELS)[number], string>;

/** A VMI's phase-count labels, as KubeVirt's kubevirt_vmi_info sets them. */
export function phaseCountLabels(vmi: VirtualMachineInstance): PhaseCountLabels {
  const annotations = vmi.metadata.annotations ?? {};
  const guest = vmi.status?.guestOSInfo;
  return {
    node: bounded(vmi.status?.nodeName),
    phase: bounded(vmi.status?.phase?.toLowerCase()),
    os: bounded(annotations["vm.kubevirt.io/os"]),
    workload: bounded(annotations["vm.kubevirt.io/workload"]),
    flavor: bounded(annotations["vm.kubevirt.io/flavor"]),
    instance_type: bounded(
      annotations["kubevirt.io/instancetype-name"] ?? annotations["kubevirt.io/cluster-instancetype-name"],
    ),
    preference: bounded(
      annotations["kubevirt.io/preference-name"] ?? annotations["kubevirt.io/cluster-preference-name"],
    ),
    guest_os_kernel_release: bounded(guest?.kernelRelease),
    // KubeVirt reads the machine type from status.machine, which copies the spec's; our VMI status has no such field.
    guest_os_machine: bounded(vmi.spec.domain.machine?.type),
    // The agent's "machine" is the guest's architecture (x86_64), hence KubeVirt's label name.
    guest_os_arch: bounded(guest?.machine),
    guest_os_name: bounded(guest?.name),
    guest_os_version_id: bounded(guest?.versionId),
  };
}

/** Whether KubeVirt counts a VMI as non-evictable: strategy LiveMigrate, and LiveMigratable not set or False. */
export function isNonEvictable(vmi: VirtualMachineInstance, clusterDefault: EvictionStrategy): boolean {
  if (evictionStrategyOf(vmi, clusterDefault) !== "LiveMigrate") return false;
  // KubeVirt is conservative here, as the series feeds an alert: a condition not yet set counts as not migratable.
  const condition = vmi.status?.conditions?.find((c) => c.type === VmiConditionType.LiveMigratable);
  return condition === undefined || condition.status === ConditionStatus.False;
}

export interface VmiStatistics {
  phaseCounts: { labels: PhaseCountLabels; count: number }[];
  /** One entry per running VMI; value 1 when a drain cannot move it. */
  nonEvictable: { labels: { node: string; namespace: string; name: string }; value: 0 | 1 }[];
  /** The running VMIs labelled kubevirt.io/outdatedLauncherImage: left in an earlier release's launcher. */
  outdated: number;
}

/**
 * The VMI series in one pass over the cache. KubeVirt reports kubevirt_vmi_non_evictable for every VMI and its
 * alert keeps the running ones by joining kubevirt_vmi_info{phase="running"}; we export no kubevirt_vmi_info, so
 * we report the running VMIs only, and the chart's alert needs no join.
 */
export function vmiStatistics(
  vmis: readonly VirtualMachineInstance[],
  clusterDefault: EvictionStrategy,
): VmiStatistics {
  const counts = new Map<string, { labels: PhaseCountLabels; count: number }>();
  const nonEvictable: VmiStatistics["nonEvictable"] = [];
  let outdated = 0;
  for (const vmi of vmis) {
    const labels = phaseCountLabels(vmi);
    const key = JSON.stringify(labels);
    const entry = counts.get(key);
    if (entry) entry.count += 1;
    else counts.set(key, { labels, count: 1 });
    if (vmi.status?.phase === "Running") {
      nonEvictable.push({
        labels: {
          node: vmi.status.nodeName ?? "",
          namespace: vmi.metadata.namespace ?? "",
          name: vmi.metadata.name ?? "",
        },
        value: isNonEvictable(vmi, clusterDefault) ? 1 : 0,
      });
      if (vmi.metadata.labels?.[Label.OutdatedLauncherImage] !== undefined) outdated += 1;
    }
  }
  return { phaseCounts: [...counts.values()], nonEvictable, outdated };
}

export interface MigrationStatistics {
  unset: number;
  pending: number;
  scheduling: number;
  running: number;
  /** One per migration object that ended, labelled as KubeVirt labels them. */
  succeeded: { vmi: string; vmim: string; namespace: string }[];
  failed: { vmi: string; vmim: string; namespace: string }[];
}

/**
 * The migration series in one pass, with KubeVirt's grouping: Scheduled, PreparingTarget and TargetReady count as
 * running (the target pod exists), a phase not yet set counts apart, and any other phase counts as failed.
 */
export function migrationStatistics(migrations: readonly VirtualMachineInstanceMigration[]): MigrationStatistics {
  const stats: MigrationStatistics = { unset: 0, pending: 0, scheduling: 0, running: 0, succeeded: [], failed: [] };
  for (const m of migrations) {
    switch (m.status?.phase) {
      case undefined:
        stats.unset += 1;
        break;
      case "Pending":
        stats.pending += 1;
        break;
      case "Scheduling":
        stats.scheduling += 1;
        break;
      case "Scheduled":
      case "PreparingTarget":
      case "TargetReady":
      case "Running":
        stats.running += 1;
        break;
      case "Succeeded":
        stats.succeeded.push(migrationLabels(m));
        break;
      default:
        stats.failed.push(migrationLabels(m));
        break;
    }
  }
  return stats;
}

const migrationLabels = (m: VirtualMachineInstanceMigration) => ({
  vmi: m.spec.vmiName,
  vmim: m.metadata.name ?? "",
  namespace: m.metadata.namespace ?? "",
});

/**
 * `compute`, run at most once per scrape: prom-client calls every metric's collect in one synchronous loop, so a
 * result kept until the next microtask serves all the gauges that share it. Were the calls spread out, each would
 * compute afresh: slower, never wrong.
 */
function oncePerScrape<T>(compute: () => T): () => T {
  let kept: { value: T } | undefined;
  return () => {
    if (kept) return kept.value;
    kept = { value: compute() };
    queueMicrotask(() => {
      kept = undefined;
    });
    return kept.value;
  };
}

export interface ClusterMetricsSources {
  registry: Registry;
  vmis: Informer<VirtualMachineInstance>;
  migrations: Informer<VirtualMachineInstanceMigration>;
  /** The cluster's eviction strategy, as the live configuration has it now. */
  evictionStrategy: () => EvictionStrategy;
  /** Whether this replica holds the leader lease. */
  leading: () => boolean;
  /** Whether this replica is ready: its caches have synced. */
  ready: () => boolean;
}

export function registerClusterMetrics(sources: ClusterMetricsSources): void {
  const { registry, vmis, migrations } = sources;
  const vmiStats = oncePerScrape(() =>
    sources.leading() ? vmiStatistics(vmis.list(), sources.evictionStrategy()) : undefined,
  );
  const migrationStats = oncePerScrape(() => (sources.leading() ? migrationStatistics(migrations.list()) : undefined));

  new Gauge({
    name: "kubevirt_virt_controller_leading_status",
    help: "Whether this virt-controller holds the leader lease and runs the controllers: 1, else 0.",
    registers: [registry],
    collect() {
      this.set(sources.leading() ? 1 : 0);
    },
  });
  new Gauge({
    name: "kubevirt_virt_controller_ready_status",
    help: "Whether this virt-controller is ready to lead (its caches have synced): 1, else 0.",
    registers: [registry],
    collect() {
      this.set(sources.ready() ? 1 : 0);
    },
  });
  new Gauge({
    name: "kubevirt_vmi_phase_count",
    help: "The number of VMIs by node, phase, OS annotations, instancetype, preference and the guest agent's OS facts.",
    labelNames: PHASE_COUNT_LABELS,
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, count } of vmiStats()?.phaseCounts ?? []) this.set(labels, count);
    },
  });
  new Gauge({
    name: "kubevirt_vmi_non_evictable",
    help: "1 for a VMI whose eviction strategy is LiveMigrate though it cannot be live-migrated, else 0.",
    labelNames: ["node", "namespace", "name"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, value } of vmiStats()?.nonEvictable ?? []) this.set(labels, value);
    },
  });
  new Gauge({
    name: "kubevirt_vmi_number_of_outdated",
    help: "The number of running VMIs whose launcher runs an image other than the installed launcher's.",
    registers: [registry],
    collect() {
      // 0 in a follower, as KubeVirt's gauge, which only the leader's workload updater sets.
      this.set(vmiStats()?.outdated ?? 0);
    },
  });
  const ended = (outcome: "succeeded" | "failed", help: string) =>
    new Gauge({
      name: `kubevirt_vmi_migration_${outcome}`,
      help,
      labelNames: ["vmi", "vmim", "namespace"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const labels of migrationStats()?.[outcome] ?? []) this.set(labels, 1);
      },
    });
  ended("succeeded", "1 for each migration object that succeeded, while the object exists.");
  ended("failed", "1 for each migration object that failed, while the object exists.");
  const inPhase = (phase: "unset" | "pending" | "scheduling" | "running", help: string) =>
    new Gauge({
      name: `kubevirt_vmi_migrations_in_${phase}_phase`,
      help,
      registers: [registry],
      collect() {
        this.set(migrationStats()?.[phase] ?? 0);
      },
    });
  inPhase("unset", "The migrations the controller has not yet given a phase.");
  inPhase("pending", "The migrations waiting to start.");
  inPhase("scheduling", "The migrations whose target pod is being scheduled.");
  inPhase("running", "The migrations under way, from a scheduled target pod to the end of the move.");
}
