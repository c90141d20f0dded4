import type { KubeObject } from "@kubevirt-ts/kube";
import { API_VERSION, Kind, Label, type VirtualMachineInstance, controllerRef } from "@kubevirt-ts/kubevirt-api";

// The PodDisruptionBudget that keeps a VMI's launcher pod from being evicted
// when the VMI's eviction strategy asks so (kubevirt-api's
// needsDisruptionBudget), as KubeVirt's disruption budget controller makes
// it: one per VMI, selecting its launcher pods by the VMI's uid, owned by
// the VMI so that it goes with it. It holds even while virt-api's eviction
// webhook is away (ADR 12).

export interface PodDisruptionBudget extends KubeObject {
  spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
}

export function launcherDisruptionBudget(vmi: VirtualMachineInstance): PodDisruptionBudget {
  const uid = vmi.metadata.uid ?? "";
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: {
      name: `kubevirt-disruption-budget-${uid}`,
      namespace: vmi.metadata.namespace,
      labels: { [Label.CreatedBy]: uid },
      ownerReferences: [controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachineInstance, metadata: vmi.metadata })],
    },
    spec: { minAvailable: 1, selector: { matchLabels: { [Label.CreatedBy]: uid } } },
  };
}
