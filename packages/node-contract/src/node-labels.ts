// What a node says it can run, in KubeVirt's label and annotation keys: the
// handler's heartbeat (kubevirt.io/schedulable and kubevirt.io/heartbeat) and
// its node labeller's CPU and machine labels; and the nodeSelector a launcher
// pod takes from them, so a VMI lands only where its CPU can run.

export const NodeLabel = {
  /** "true" while the node's handler beats; "false" once it stopped (KubeVirt's virt-handler and node controller). */
  Schedulable: "kubevirt.io/schedulable",
} as const;

export const NodeAnnotation = {
  /** When the node's handler last beat, RFC 3339 (KubeVirt's). */
  Heartbeat: "kubevirt.io/heartbeat",
} as const;

/**
 * The node labeller's label prefixes (KubeVirt's): a key is the prefix and a model, feature, vendor or machine type.
 */
export const NodeLabelPrefix = {
  CpuModel: "cpu-model.node.kubevirt.io/",
  CpuModelMigration: "cpu-model-migration.node.kubevirt.io/",
  CpuFeature: "cpu-feature.node.kubevirt.io/",
  HostModelCpu: "host-model-cpu.node.kubevirt.io/",
  HostModelRequiredFeatures: "host-model-required-features.node.kubevirt.io/",
  CpuVendor: "cpu-vendor.node.kubevirt.io/",
  CpuTimer: "cpu-timer.node.kubevirt.io/",
  MachineType: "machine-type.node.kubevirt.io/",
} as const;

const LABELLER_PREFIXES: readonly string[] = Object.values(NodeLabelPrefix);

/** Whether the node labeller owns a label: the ones it removes when the node no longer has what they name. */
export function isNodeLabellerLabel(key: string): boolean {
  return LABELLER_PREFIXES.some((prefix) => key.startsWith(prefix));
}

/** KubeVirt's CPU modes that name no model of their own. */
const CPU_MODES = new Set(["host-model", "host-passthrough", "maximum"]);

/** The CPU model a VMI names as a custom model, or undefined for a mode (host-model, host-passthrough) or none. */
export function customCpuModel(model: string | undefined): string | undefined {
  return model === undefined || model === "" || CPU_MODES.has(model) ? undefined : model;
}

/**
 * The node labels a launcher pod selects, as KubeVirt's: a node whose handler beats, and, for a custom CPU model,
 * one whose labeller found that model usable. The VMI's own nodeSelector comes on top.
 */
export function launcherNodeSelector(cpuModel: string | undefined): Record<string, string> {
  const model = customCpuModel(cpuModel);
  return {
    [NodeLabel.Schedulable]: "true",
    ...(model !== undefined ? { [NodeLabelPrefix.CpuModel + model]: "true" } : {}),
  };
}

/**
 * A host-model VMI's migration target: a node that can run the source node's host CPU model and has every feature
 * that model needs there (KubeVirt's). Undefined when the source node carries no host-model label (no labeller ran).
 */
export function hostModelTargetSelector(
  sourceNodeLabels: Readonly<Record<string, string>>,
): Record<string, string> | undefined {
  const entries = Object.entries(sourceNodeLabels);
  const hostModel = entries.find(([key]) => key.startsWith(NodeLabelPrefix.HostModelCpu));
  if (!hostModel) return undefined;
  const selector: Record<string, string> = {
    [NodeLabelPrefix.CpuModelMigration + hostModel[0].slice(NodeLabelPrefix.HostModelCpu.length)]: "true",
  };
  for (const [key] of entries) {
    if (key.startsWith(NodeLabelPrefix.HostModelRequiredFeatures))
      selector[NodeLabelPrefix.CpuFeature + key.slice(NodeLabelPrefix.HostModelRequiredFeatures.length)] = "true";
  }
  return selector;
}

/** Whether a VMI's CPU is the node's host model (what it gets with no model, as KubeVirt's default). */
export function followsHostModel(cpuModel: string | undefined): boolean {
  return cpuModel === undefined || cpuModel === "" || cpuModel === "host-model";
}

/** The reason of the events and of the Failed VMIs of a node whose handler stopped beating (KubeVirt's). */
export const NODE_UNRESPONSIVE_REASON = "NodeUnresponsive";

/** KubeVirt's heartbeat timeout: a node whose handler has not beaten for this long is unschedulable. */
export const DEFAULT_HEARTBEAT_TIMEOUT_SECONDS = 300;
