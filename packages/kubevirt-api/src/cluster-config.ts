import type { EvictionStrategy } from "./constants.ts";
import { DEFAULTING_OPTIONS } from "./defaults.ts";
import { kubevirtResources } from "./resources.ts";
import type { KubeVirt } from "./schema/kubevirt.ts";
import type { MigrationConfiguration } from "./schema/migration-policy.ts";

// The cluster's configuration as every component uses it: the chart's values
// (each component's environment) with the KubeVirt CR over them, field by
// field; the CR wins wherever it speaks. Components watch the CR and take the
// result of `clusterConfig` again on every change, without a restart.

/** KubeVirt's defaults (MigrationConfiguration): migrations in flight in the cluster and out of one node. */
export const DEFAULT_PARALLEL_MIGRATIONS_PER_CLUSTER = 5;
export const DEFAULT_PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE = 2;
/** KubeVirt's default seconds a migration may take per GiB copied before it is aborted (or switched to post-copy). */
export const DEFAULT_COMPLETION_TIMEOUT_PER_GIB = 150;
/** KubeVirt's default seconds a migration may go without progress (the data left going down) before it is aborted. */
export const DEFAULT_PROGRESS_TIMEOUT_SECONDS = 150;

export type PullPolicy = "Always" | "IfNotPresent" | "Never";

/**
 * KubeVirt's per-component log verbosity (klog levels 0-9); unset: the component's own LOG_LEVEL (the chart's
 * logLevel).
 */
export interface LogVerbosity {
  virtAPI?: number | undefined;
  virtController?: number | undefined;
  virtHandler?: number | undefined;
  virtLauncher?: number | undefined;
}
export type VerbosityComponent = keyof LogVerbosity;

export interface ClusterConfig {
  useEmulation: boolean;
  featureGates: readonly string[];
  /** Percent: the guest's memory against its launcher pod's request. */
  memoryOvercommit: number;
  /** vCPUs per requested CPU, for launcher pods whose VMI requests none. */
  cpuAllocationRatio: number;
  logVerbosity: LogVerbosity;
  evictionStrategy: EvictionStrategy;
  migrations: Required<
    Pick<
      MigrationConfiguration,
      | "parallelMigrationsPerCluster"
      | "parallelOutboundMigrationsPerNode"
      | "allowAutoConverge"
      | "allowPostCopy"
      | "completionTimeoutPerGiB"
      | "progressTimeout"
    >
  > & {
    bandwidthPerMigration: string | number;
  };
  machineType: string;
  /** The CPU model of VMIs that name none; unset: none is set (libvirt's default). */
  cpuModel: string | undefined;
  defaultRuntimeClass: string | undefined;
  imagePullPolicy: PullPolicy;
  vmStateStorageClass: string | undefined;
}

/** KubeVirt's defaults (its virt-config), which the chart's values start from. */
export const DEFAULT_CPU_ALLOCATION_RATIO = 10;
export const DEFAULT_MEMORY_OVERCOMMIT = 100;

/** A configuration of KubeVirt's defaults, with what a component knows from its environment over them. */
export function defaultClusterConfig(overrides: Partial<ClusterConfig> = {}): ClusterConfig {
  return {
    useEmulation: false,
    featureGates: [],
    memoryOvercommit: DEFAULT_MEMORY_OVERCOMMIT,
    cpuAllocationRatio: DEFAULT_CPU_ALLOCATION_RATIO,
    logVerbosity: {},
    evictionStrategy: "None",
    migrations: {
      parallelMigrationsPerCluster: DEFAULT_PARALLEL_MIGRATIONS_PER_CLUSTER,
      parallelOutboundMigrationsPerNode: DEFAULT_PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE,
      allowAutoConverge: false,
      allowPostCopy: false,
      bandwidthPerMigration: "0Mi",
      completionTimeoutPerGiB: DEFAULT_COMPLETION_TIMEOUT_PER_GIB,
      progressTimeout: DEFAULT_PROGRESS_TIMEOUT_SECONDS,
    },
    machineType: DEFAULTING_OPTIONS.machineType,
    cpuModel: undefined,
    defaultRuntimeClass: undefined,
    imagePullPolicy: "IfNotPresent",
    vmStateStorageClass: undefined,
    ...overrides,
  };
}

/** The name the chart gives the KubeVirt CR, in the release namespace; components watch this one. */
export const KUBEVIRT_CR_NAME = "kubevirt-ts";

/** `base` with each field `over` sets (one left undefined keeps base's), as the CR's sections lie over the chart's. */
function definedOver<T extends object>(base: T, over: Partial<T> | undefined): T {
  return { ...base, ...Object.fromEntries(Object.entries(over ?? {}).filter(([, value]) => value !== undefined)) };
}

/**
 * Where a component finds the one KubeVirt CR it follows: an informer's type, namespace and selector, the same for all.
 */
export function kubeVirtInformerOptions(namespace: string): {
  type: typeof kubevirtResources.kubeVirts;
  namespace: string;
  fieldSelector: string;
} {
  return { type: kubevirtResources.kubeVirts, namespace, fieldSelector: `metadata.name=${KUBEVIRT_CR_NAME}` };
}

/** The configuration: `base` (the chart's values, from the environment) with the CR's fields over it. */
export function clusterConfig(base: ClusterConfig, kv: Pick<KubeVirt, "spec"> | undefined): ClusterConfig {
  const c = kv?.spec.configuration;
  if (c === undefined) return base;
  const dev = c.developerConfiguration ?? {};
  return {
    useEmulation: dev.useEmulation ?? base.useEmulation,
    featureGates: dev.featureGates ?? base.featureGates,
    memoryOvercommit: dev.memoryOvercommit ?? base.memoryOvercommit,
    cpuAllocationRatio: dev.cpuAllocationRatio ?? base.cpuAllocationRatio,
    logVerbosity: definedOver(base.logVerbosity, dev.logVerbosity),
    evictionStrategy: c.evictionStrategy ?? base.evictionStrategy,
    migrations: definedOver(base.migrations, c.migrations),
    // KubeVirt: the architecture's machine type wins over the deprecated top-level one.
    machineType: c.architectureConfiguration?.amd64?.machineType ?? c.machineType ?? base.machineType,
    cpuModel: c.cpuModel ?? base.cpuModel,
    defaultRuntimeClass: c.defaultRuntimeClass ?? base.defaultRuntimeClass,
    imagePullPolicy: c.imagePullPolicy ?? kv?.spec.imagePullPolicy ?? base.imagePullPolicy,
    vmStateStorageClass: c.vmStateStorageClass ?? base.vmStateStorageClass,
  };
}

/** The log level of a klog verbosity: KubeVirt logs its details at 3 and more, its debugging at 4 and more. */
export function logLevelOf(verbosity: number): "debug" | "info" {
  return verbosity >= 4 ? "debug" : "info";
}

/**
 * The launcher pod's CPU request for a VMI that requests none: KubeVirt's vCPUs / cpuAllocationRatio, in millicores
 * (at least 1m), whole CPUs as plain numbers.
 */
export function launcherCpuRequest(vcpus: number, cpuAllocationRatio: number): string {
  const millis = Math.max(1, Math.ceil((vcpus * 1000) / cpuAllocationRatio));
  // Whole CPUs as the API server writes them back.
  return millis % 1000 === 0 ? String(millis / 1000) : `${String(millis)}m`;
}

/** The launcher pod's memory request for the guest's memory under memoryOvercommit (percent), in bytes. */
export function overcommittedGuestBytes(guestBytes: number, memoryOvercommit: number): number {
  return memoryOvercommit === DEFAULT_MEMORY_OVERCOMMIT ? guestBytes : Math.ceil((guestBytes * 100) / memoryOvercommit);
}

/**
 * KubeVirt's feature gates as kubevirt-ts reads them. A gate kubevirt-ts has a feature behind is honoured (none yet:
 * what kubevirt-ts has is on without a gate); every other name is ignored with the reason, in the webhook's warnings
 * and the controller's log, never silently.
 */
export const GATED_FEATURES: ReadonlySet<string> = new Set<string>();

/** KubeVirt gates whose feature kubevirt-ts has always on: the gate changes nothing. */
const ALWAYS_ON = new Set([
  // Graduated in KubeVirt, and on in kubevirt-ts.
  "LiveMigration",
  "DataVolumes",
  "NonRoot",
  "PSA",
  "CPUNodeDiscovery",
  "CommonInstancetypesDeploymentGate",
  "VMPersistentState",
  "NodeRestriction",
  "KubevirtSeccompProfile",
  "BochsDisplayForEFIGuests",
  // Alpha in KubeVirt; the objectgraph subresource is always served here.
  "ObjectGraph",
  // Beta in KubeVirt; snapshots, restores and clones are always served here (docs/data-protection.md).
  "Snapshot",
]);

/** KubeVirt gates for features kubevirt-ts does not have (yet). */
const ABSENT = new Set([
  "ExpandDisks",
  "CPUManager",
  "ExperimentalIgnitionSupport",
  "HypervStrictCheck",
  "Sidecar",
  "HostDevices",
  "VMExport",
  "HostDisk",
  "HotplugVolumes",
  "UtilityVolumes",
  "DownwardMetrics",
  "Root",
  "WorkloadEncryptionSEV",
  "WorkloadEncryptionTDX",
  "VSOCK",
  "DisableMDEVConfiguration",
  "PersistentReservation",
  "AlignCPUs",
  "ImageVolume",
  "IncrementalBackup",
  "EnableVirtioFsStorageVolumes",
  "EnableVirtioFsConfigVolumes",
  "ExperimentalVirtiofsSupport",
  "GPUsWithDRA",
  "HostDevicesWithDRA",
  "DecentralizedLiveMigration",
  "DeclarativeHotplugVolumes",
  "SecureExecution",
  "VideoConfig",
  "PanicDevices",
  "PasstIPStackMigration",
  "MigrationPriorityQueue",
  "GPU",
  "NUMA",
  "SRIOVLiveMigration",
  "HotplugNICs",
  "NetworkBindingPlugins",
  "DynamicPodInterfaceNaming",
  "VMLiveUpdateFeatures",
  "VolumesUpdateStrategy",
  "VolumeMigration",
  "InstancetypeReferencePolicy",
  "AutoResourceLimitsGate",
  "Macvtap",
  "Passt",
  "ClusterProfiler",
  "MultiArchitecture",
  "VMStatsCollector",
  "Template",
]);

/** Why each gate that is not honoured is ignored, one sentence per gate, naming its place in the CR. */
export function featureGateWarnings(gates: readonly string[]): string[] {
  return gates.flatMap((gate, i) => {
    const where = `spec.configuration.developerConfiguration.featureGates[${String(i)}] (${gate})`;
    if (GATED_FEATURES.has(gate)) return [];
    if (ALWAYS_ON.has(gate)) return [`${where}: kubevirt-ts has this feature always on; the gate changes nothing`];
    if (ABSENT.has(gate)) return [`${where}: kubevirt-ts does not have this feature yet; the gate is ignored`];
    return [`${where}: not a KubeVirt feature gate kubevirt-ts knows; it is ignored (check its spelling)`];
  });
}

/**
 * The configuration as it is now, for a component that watches the KubeVirt CR: `observe` is handed the CR on every
 * change (undefined once it is gone: the chart's values again), listeners hear of each change that makes a difference.
 */
export class LiveClusterConfig {
  private config: ClusterConfig;
  private readonly listeners: ((config: ClusterConfig, previous: ClusterConfig) => void)[] = [];

  private readonly base: ClusterConfig;

  constructor(base: ClusterConfig) {
    this.base = base;
    this.config = base;
  }

  get(): ClusterConfig {
    return this.config;
  }

  onChange(listener: (config: ClusterConfig, previous: ClusterConfig) => void): void {
    this.listeners.push(listener);
  }

  /**
   * An informer's handlers (of the CR, KUBEVIRT_CR_NAME in the release namespace) that keep this configuration at it.
   */
  informerHandler(): { add(kv: KubeVirt): void; update(previous: KubeVirt, kv: KubeVirt): void; delete(): void } {
    return {
      add: (kv) => {
        this.observe(kv);
      },
      update: (_, kv) => {
        this.observe(kv);
      },
      delete: () => {
        this.observe(undefined);
      },
    };
  }

  observe(kv: Pick<KubeVirt, "spec"> | undefined): void {
    const next = clusterConfig(this.base, kv);
    if (JSON.stringify(next) === JSON.stringify(this.config)) return;
    const previous = this.config;
    this.config = next;
    for (const listener of this.listeners) listener(next, previous);
  }
}

type Level = "debug" | "info" | "warn" | "error";

/**
 * Keeps a component's log level at its verbosity in the configuration (KubeVirt's logVerbosity), or at its own
 * LOG_LEVEL while the configuration names none, now and on every change; each change is logged.
 */
export function followLogVerbosity(
  live: LiveClusterConfig,
  component: VerbosityComponent,
  log: { setLevel(level: Level): void; info(msg: string, fields?: Record<string, unknown>): void },
  ownLevel: Level,
): void {
  const apply = (config: ClusterConfig, previous: ClusterConfig | undefined) => {
    const verbosity = config.logVerbosity[component];
    if (previous !== undefined && previous.logVerbosity[component] === verbosity) return;
    const level = verbosity === undefined ? ownLevel : logLevelOf(verbosity);
    log.setLevel(level);
    log.info("log verbosity applied", { component, verbosity: verbosity ?? "unset", level });
  };
  apply(live.get(), undefined);
  live.onChange(apply);
}
