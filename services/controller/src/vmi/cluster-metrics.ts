import type { Informer } from "@kubevirt-ts/kube";
import type {
  EvictionStrategy,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from "@kubevirt-ts/kubevirt-api";
import { evictionStrategyOf, isLiveMigratable } from "@kubevirt-ts/vm-rules";
import { Gauge, type Registry } from "prom-client";

// KubeVirt's virt-controller series that its alerts and dashboards read
// (the chart's prometheus-rules.yaml, ADR 29): this replica's readiness and
// leadership, and what the caches hold, counted at scrape time in one pass.
// The counts come from the leader only: the other replicas' caches hold the
// same objects, and a sum over replicas would count each VMI twice.

/** A label value as KubeVirt writes an absent one, and at most 63 characters (guest agents write some of them). */
const NONE = "<none>";
const bounded = (value: string | undefined) => (value ? value.slice(0, 63) : NONE);

/** KubeVirt's labels of kubevirt_vmi_phase_count. */
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
  "guest_os_name",
  "guest_os_version_id",
] as const;
type PhaseCountLabels = Record<(typeof PHASE_COUNT_LABELS)[number], string>;

/** The VMIs by KubeVirt's phase-count labels (phase in lower case, as KubeVirt reports it). */
export function vmiPhaseCounts(vmis: readonly VirtualMachineInstance[]): { labels: PhaseCountLabels; count: number }[] {
  const counts = new Map<string, { labels: PhaseCountLabels; count: number }>();
  for (const vmi of vmis) {
    const annotations = vmi.metadata.annotations ?? {};
    const guest = vmi.status?.guestOSInfo;
    const labels: PhaseCountLabels = {
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
      guest_os_machine: bounded(guest?.machine),
      guest_os_name: bounded(guest?.name),
      guest_os_version_id: bounded(guest?.versionId),
    };
    const key = JSON.stringify(labels);
    const entry = counts.get(key);
    if (entry) entry.count += 1;
    else counts.set(key, { labels, count: 1 });
  }
  return [...counts.values()];
}

/**
 * The running VMIs a node drain cannot move: eviction strategy LiveMigrate (their own, else the cluster's) but not
 * live-migratable, so their launcher pods' evictions are refused (KubeVirt's kubevirt_vmi_non_evictable).
 */
export function nonEvictableVmis(
  vmis: readonly VirtualMachineInstance[],
  clusterDefault: EvictionStrategy,
): { namespace: string; name: string; node: string; value: 0 | 1 }[] {
  return vmis
    .filter((vmi) => vmi.status?.phase === "Running")
    .map((vmi) => ({
      namespace: vmi.metadata.namespace ?? "",
      name: vmi.metadata.name ?? "",
      node: vmi.status?.nodeName ?? "",
      value: evictionStrategyOf(vmi, clusterDefault) === "LiveMigrate" && !isLiveMigratable(vmi) ? 1 : 0,
    }));
}

/** Migrations not yet done, by KubeVirt's three gauges: pending, scheduling (till the target runs), running. */
export function migrationsInFlight(migrations: readonly VirtualMachineInstanceMigration[]): {
  pending: number;
  scheduling: number;
  running: number;
} {
  const counts = { pending: 0, scheduling: 0, running: 0 };
  for (const migration of migrations) {
    switch (migration.status?.phase) {
      case undefined:
      case "Pending":
        counts.pending += 1;
        break;
      case "Scheduling":
      case "Scheduled":
      case "PreparingTarget":
      case "TargetReady":
        counts.scheduling += 1;
        break;
      case "Running":
        counts.running += 1;
        break;
      default:
        break;
    }
  }
  return counts;
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
  new Gauge({
    name: "kubevirt_virt_controller_leading_status",
    help: "Whether this virt-controller holds the leader lease: 1, else 0.",
    registers: [registry],
    collect() {
      this.set(sources.leading() ? 1 : 0);
    },
  });
  new Gauge({
    name: "kubevirt_virt_controller_ready_status",
    help: "Whether this virt-controller is ready (its caches have synced): 1, else 0.",
    registers: [registry],
    collect() {
      this.set(sources.ready() ? 1 : 0);
    },
  });
  new Gauge({
    name: "kubevirt_vmi_phase_count",
    help: "The VMIs by phase, node, OS labels, instancetype, preference and what their guest agent says of the OS.",
    labelNames: PHASE_COUNT_LABELS,
    registers: [registry],
    collect() {
      this.reset();
      if (!sources.leading()) return;
      for (const { labels, count } of vmiPhaseCounts(vmis.list())) this.set(labels, count);
    },
  });
  new Gauge({
    name: "kubevirt_vmi_non_evictable",
    help: "Whether a running VMI's eviction strategy is LiveMigrate though it cannot be live-migrated: 1, else 0.",
    labelNames: ["namespace", "name", "node"] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!sources.leading()) return;
      for (const { value, ...labels } of nonEvictableVmis(vmis.list(), sources.evictionStrategy())) {
        this.set(labels, value);
      }
    },
  });
  new Gauge({
    name: "kubevirt_vmi_migration_succeeded",
    help: "A migration that succeeded (1), by VMI and migration, while its object is kept.",
    labelNames: ["namespace", "vmi", "vmim"] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!sources.leading()) return;
      for (const m of migrations.list()) {
        if (m.status?.phase !== "Succeeded") continue;
        this.set({ namespace: m.metadata.namespace ?? "", vmi: m.spec.vmiName, vmim: m.metadata.name ?? "" }, 1);
      }
    },
  });
  const inFlight = (phase: "pending" | "scheduling" | "running", help: string) =>
    new Gauge({
      name: `kubevirt_vmi_migrations_in_${phase}_phase`,
      help,
      registers: [registry],
      collect() {
        this.set(sources.leading() ? migrationsInFlight(migrations.list())[phase] : 0);
      },
    });
  inFlight("pending", "The migrations waiting to start.");
  inFlight("scheduling", "The migrations whose target pod is being scheduled or prepared.");
  inFlight("running", "The migrations moving their VMI.");
}
