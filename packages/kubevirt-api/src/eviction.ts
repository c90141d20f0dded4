import type { EvictionStrategy } from "./constants.ts";
import type { VirtualMachineInstance } from "./schema/vmi.ts";

// What an eviction of a VMI's launcher pod (kubectl drain, the descheduler:
// Kubernetes' API-initiated eviction) does to the VMI, by its eviction
// strategy, as KubeVirt decides it: its pod-eviction webhook allows or
// denies the eviction and may mark the VMI for evacuation, and a
// PodDisruptionBudget protects the launcher pods that must not be evicted
// even while the webhook is away. kubevirt-ts cannot live migrate yet, so
// every VMI is what KubeVirt calls not migratable (ADR 12).

/** The VMI's eviction strategy: its own, else the cluster's (the chart's evictionStrategy, KubeVirt's CR setting). */
export function evictionStrategyOf(vmi: Pick<VirtualMachineInstance, "spec">, clusterDefault: EvictionStrategy): EvictionStrategy {
  return vmi.spec.evictionStrategy ?? clusterDefault;
}

/** Whether a VMI can be live migrated: none can, until kubevirt-ts migrates (issue 17); the tables below keep KubeVirt's rows for both. */
function liveMigratable(): boolean {
  return false;
}

export type EvictionDecision =
  /** The eviction goes on (a PDB may still block it); `evacuate`: the VMI is marked for evacuation from its node. */
  | { allow: true; evacuate: boolean }
  | { allow: false; message: string };

/** KubeVirt's webhook decision for an eviction of the launcher pod of a VMI. */
export function evictionDecision(vmi: Pick<VirtualMachineInstance, "spec" | "metadata">, clusterDefault: EvictionStrategy): EvictionDecision {
  const strategy = evictionStrategyOf(vmi, clusterDefault);
  const migratable = liveMigratable();
  switch (strategy) {
    case "None":
      return { allow: true, evacuate: false };
    case "LiveMigrateIfPossible":
      return { allow: true, evacuate: migratable };
    case "External":
      return { allow: true, evacuate: true };
    case "LiveMigrate":
      if (migratable) return { allow: true, evacuate: true };
      return {
        allow: false,
        message: `VMI ${vmi.metadata.name ?? ""} has evictionStrategy LiveMigrate, but it cannot be live migrated (kubevirt-ts does not migrate yet), so its launcher pod is not evicted: stop the VM (virtctl stop), or set its evictionStrategy to None or LiveMigrateIfPossible for it to stop when its node is drained`,
      };
  }
}

/** Whether the VMI's launcher pod is protected by a PodDisruptionBudget, as KubeVirt's disruption budget controller decides. */
export function needsDisruptionBudget(vmi: Pick<VirtualMachineInstance, "spec">, clusterDefault: EvictionStrategy): boolean {
  const strategy = evictionStrategyOf(vmi, clusterDefault);
  return strategy === "LiveMigrate" || strategy === "External" || (strategy === "LiveMigrateIfPossible" && liveMigratable());
}
