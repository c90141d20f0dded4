import type { Pod, PodSpec } from "@kubevirt-ts/kube";
import type { ClaimObject } from "@kubevirt-ts/vm-rules";
import { Label, type VirtualMachineInstance, type VirtualMachineInstanceMigration } from "@kubevirt-ts/kubevirt-api";
import { followsHostModel, hostModelTargetSelector } from "@kubevirt-ts/node-contract";
import { type LauncherPodConfig, launcherPod } from "../vmi/pod.ts";

// A migration's target pod: the VMI's launcher pod as the VMI controller
// makes it (one builder, vmi/pod.ts), labelled with the migration's uid, kept
// off every node where a pod of the VMI runs (a required anti-affinity by
// kubernetes.io/hostname, as KubeVirt's), and held to the migration's
// addedNodeSelector besides the VMI's own. A VMI with the host's CPU model
// (host-model, or none) goes only to a node that can run the source node's
// host model with every feature that model needs there (KubeVirt's).

const HOSTNAME = "kubernetes.io/hostname";

type Affinity = NonNullable<PodSpec["affinity"]>;

function withAntiAffinity(affinity: Affinity | undefined, vmiUid: string): Affinity {
  const anti = affinity?.podAntiAffinity;
  const term = {
    labelSelector: { matchExpressions: [{ key: Label.CreatedBy, operator: "In", values: [vmiUid] }] },
    topologyKey: HOSTNAME,
  };
  return {
    ...affinity,
    podAntiAffinity: {
      ...anti,
      requiredDuringSchedulingIgnoredDuringExecution: [
        ...(anti?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
        term,
      ],
    },
  };
}

export function migrationTargetPod(
  vmi: VirtualMachineInstance,
  migration: VirtualMachineInstanceMigration,
  config: LauncherPodConfig,
  claims: ReadonlyMap<string, ClaimObject>,
  sourceNodeLabels?: Readonly<Record<string, string>>,
): Pod & { spec: PodSpec } {
  const pod = launcherPod(vmi, config, claims);
  const hostModel =
    followsHostModel(vmi.spec.domain.cpu?.model) && sourceNodeLabels
      ? hostModelTargetSelector(sourceNodeLabels)
      : undefined;
  // addedNodeSelector narrows where the target may go, never lifts the VMI's or KubeVirt's own selectors (as
  // KubeVirt's).
  const nodeSelector = { ...migration.spec.addedNodeSelector, ...pod.spec.nodeSelector, ...hostModel };
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      labels: { ...pod.metadata.labels, [Label.MigrationJobUid]: migration.metadata.uid ?? "" },
    },
    spec: {
      ...pod.spec,
      ...(Object.keys(nodeSelector).length > 0 ? { nodeSelector } : {}),
      affinity: withAntiAffinity(pod.spec.affinity, vmi.metadata.uid ?? ""),
    },
  };
}
