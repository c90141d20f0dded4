import type { KubeObject } from "@kubevirt-ts/kube";
import { API_VERSION, Kind, Label, type VirtualMachineInstance, controllerRef } from "@kubevirt-ts/kubevirt-api";

// The PodDisruptionBudget that keeps a VMI's launcher pod from being evicted
// when the VMI's eviction strategy asks so (vm-rules'
// needsDisruptionBudget), as KubeVirt's disruption budget controller makes
// it: one per VMI, selecting its launcher pods by the VMI's uid, owned by
// the VMI so that it goes with it. It holds even while virt-api's eviction
// webhook is away (ADR 12).

export interface PodDisruptionBudget extends KubeObject {
  spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
}

/** The budget's name: by the VMI's uid, as KubeVirt names it. */
export const launcherDisruptionBudgetName = (vmi: Pick<VirtualMachineInstance, "metadata">): string =>
  `kubevirt-disruption-budget-${vmi.metadata.uid ?? ""}`;

/**
 * The budget, minAvailable 1; while the VMI moves, the migration controller raises it to 2 and labels it with the
 * migration's name (kubevirt.io/migrationName), so that neither the source nor the target pod is evicted, as
 * KubeVirt's.
 */
export function launcherDisruptionBudget(vmi: VirtualMachineInstance): PodDisruptionBudget {
  const uid = vmi.metadata.uid ?? "";
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: {
      name: launcherDisruptionBudgetName(vmi),
      namespace: vmi.metadata.namespace,
      labels: { [Label.CreatedBy]: uid },
      ownerReferences: [
        controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachineInstance, metadata: vmi.metadata }),
      ],
    },
    spec: { minAvailable: 1, selector: { matchLabels: { [Label.CreatedBy]: uid } } },
  };
}
