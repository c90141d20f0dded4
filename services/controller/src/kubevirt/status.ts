import type { KubeObject } from "@kubevirt-ts/kube";
import { setCondition } from "@kubevirt-ts/kube";
import type { KubeVirt, KubeVirtStatus } from "@kubevirt-ts/kubevirt-api";

// The KubeVirt CR's status, as KubeVirt's operator reports its install: the
// phase and the Available, Progressing and Degraded conditions, from how
// the components' workloads are (Helm deployed them; virt-controller only
// reads them).

/** A component's workload as the status reads it: a Deployment's or a DaemonSet's counts. */
export interface ComponentWorkload extends KubeObject {
  kind?: string;
  metadata: KubeObject["metadata"] & { generation?: number };
  status?: {
    observedGeneration?: number;
    // Deployment
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    // DaemonSet
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
  };
  spec?: { replicas?: number };
}

/** The components whose workloads make the installation, by the name the chart gives them. */
export const COMPONENTS = [
  { name: "virt-api", kind: "Deployment" },
  { name: "virt-controller", kind: "Deployment" },
  { name: "virt-handler", kind: "DaemonSet" },
] as const;

interface Health {
  name: string;
  /** At least one replica (a Deployment) or every node's pod (a DaemonSet) is available. */
  available: boolean;
  /** Every replica is of the newest template and available. */
  settled: boolean;
  detail: string;
}

function health(name: string, workload: ComponentWorkload | undefined): Health {
  if (!workload) return { name, available: false, settled: false, detail: `${name} is not deployed` };
  const s = workload.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (workload.metadata.generation ?? 0);
  if (s.desiredNumberScheduled !== undefined) {
    const desired = s.desiredNumberScheduled;
    const available = s.numberAvailable ?? 0;
    return {
      name,
      available: desired > 0 && available === desired,
      settled: observed && (s.updatedNumberScheduled ?? 0) === desired && available === desired,
      detail: `${name}: ${String(available)} of ${String(desired)} nodes available`,
    };
  }
  const desired = workload.spec?.replicas ?? 1;
  const available = s.availableReplicas ?? 0;
  return {
    name,
    available: available > 0,
    settled: observed && (s.updatedReplicas ?? 0) === desired && available === desired && (s.replicas ?? 0) === desired,
    detail: `${name}: ${String(available)} of ${String(desired)} replicas available`,
  };
}

/** The status of the KubeVirt CR, given its components' workloads by name. */
export function kubeVirtStatus(
  kv: KubeVirt,
  workloads: ReadonlyMap<string, ComponentWorkload>,
  version: string,
  now: Date,
): KubeVirtStatus {
  const components = COMPONENTS.map((c) => health(c.name, workloads.get(c.name)));
  const unavailable = components.filter((c) => !c.available);
  const unsettled = components.filter((c) => !c.settled);
  const available = unavailable.length === 0;
  const say = (list: Health[]) => `${list.map((c) => c.detail).join("; ")}.`;
  let conditions = kv.status?.conditions;
  conditions = setCondition(
    conditions,
    available
      ? { type: "Available", status: "True", reason: "AllComponentsReady", message: "All components are ready." }
      : { type: "Available", status: "False", reason: "DeploymentInProgress", message: say(unavailable) },
    now,
  );
  conditions = setCondition(
    conditions,
    unsettled.length === 0
      ? { type: "Progressing", status: "False", reason: "AllComponentsReady", message: "All components are ready." }
      : { type: "Progressing", status: "True", reason: "DeploymentInProgress", message: say(unsettled) },
    now,
  );
  // Degraded: a component that had been available is not (KubeVirt's operator says so once it deployed).
  const deployed = kv.status?.phase === "Deployed";
  conditions = setCondition(
    conditions,
    deployed && !available
      ? { type: "Degraded", status: "True", reason: "ComponentsUnavailable", message: say(unavailable) }
      : {
          type: "Degraded",
          status: "False",
          reason: "AllComponentsReady",
          message: available ? "All components are ready." : "The components are being deployed.",
        },
    now,
  );
  const phase = kv.metadata.deletionTimestamp ? "Deleting" : available || deployed ? "Deployed" : "Deploying";
  return {
    ...kv.status,
    phase,
    conditions,
    ...(kv.metadata.generation !== undefined ? { observedGeneration: kv.metadata.generation } : {}),
    observedKubeVirtVersion: version,
    targetKubeVirtVersion: version,
    operatorVersion: version,
    defaultArchitecture: "amd64",
  };
}
