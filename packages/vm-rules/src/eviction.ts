import type { EvictionStrategy, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { isLiveMigratable } from "./migration.ts";

// What an eviction of a VMI's launcher pod (kubectl drain, the descheduler:
// Kubernetes' API-initiated eviction) does to the VMI, by its eviction
// strategy, as KubeVirt decides it: its pod-eviction webhook allows or
// denies the eviction and may mark the VMI for evacuation, and a
// PodDisruptionBudget protects the launcher pods that must not be evicted
// even while the webhook is away. Whether a VMI can move is its
// LiveMigratable condition (migration.ts); one that can is marked for
// evacuation, and the controller migrates it off the node (ADR 12, 19).

/** The VMI's eviction strategy: its own, else the cluster's (the chart's evictionStrategy, KubeVirt's CR setting). */
export function evictionStrategyOf(
  vmi: Pick<VirtualMachineInstance, "spec">,
  clusterDefault: EvictionStrategy,
): EvictionStrategy {
  return vmi.spec.evictionStrategy ?? clusterDefault;
}

export type EvictionDecision =
  /** The eviction goes on (a PDB may still block it); `evacuate`: the VMI is marked for evacuation from its node. */
  | { allow: true; evacuate: boolean }
  /**
   * Refused with 429; `evacuate`: the VMI is marked for evacuation, and the drain's retries go through once it moved.
   */
  | { allow: false; evacuate: boolean; message: string };

type VmiFacts = Pick<VirtualMachineInstance, "spec" | "metadata" | "status">;

/** KubeVirt's webhook decision for an eviction of the launcher pod of a VMI. */
export function evictionDecision(vmi: VmiFacts, clusterDefault: EvictionStrategy): EvictionDecision {
  const strategy = evictionStrategyOf(vmi, clusterDefault);
  const name = `${vmi.metadata.namespace ?? ""}/${vmi.metadata.name ?? ""}`;
  const evacuating = {
    allow: false as const,
    evacuate: true,
    message:
      `Eviction triggered evacuation of VMI ${name}: it is migrated to another ` +
      "node, after which its launcher pod goes",
  };
  switch (strategy) {
    case "None":
      return { allow: true, evacuate: false };
    case "LiveMigrateIfPossible":
      return isLiveMigratable(vmi) ? evacuating : { allow: true, evacuate: false };
    case "External":
      return { allow: true, evacuate: true };
    case "LiveMigrate": {
      if (isLiveMigratable(vmi)) return evacuating;
      const why =
        vmi.status?.conditions?.find((c) => c.type === "LiveMigratable")?.message ??
        "it has no LiveMigratable condition yet";
      return {
        allow: false,
        evacuate: false,
        message:
          `VMI ${vmi.metadata.name ?? ""} has evictionStrategy LiveMigrate, but it cannot be live ` +
          `migrated (${why}), so its launcher pod is not evicted: stop the VM (virtctl stop), or set its ` +
          "evictionStrategy to None or LiveMigrateIfPossible for it to stop when its node is drained",
      };
    }
  }
}

/**
 * Whether the VMI's launcher pod is protected by a PodDisruptionBudget, as KubeVirt's disruption budget controller
 * decides.
 */
export function needsDisruptionBudget(
  vmi: Pick<VirtualMachineInstance, "spec" | "status">,
  clusterDefault: EvictionStrategy,
): boolean {
  const strategy = evictionStrategyOf(vmi, clusterDefault);
  return (
    strategy === "LiveMigrate" ||
    strategy === "External" ||
    (strategy === "LiveMigrateIfPossible" && isLiveMigratable(vmi))
  );
}
