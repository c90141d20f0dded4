import { type KubeClient, type Node, type Pod, resources } from "@kubevirt-ts/kube";
import { type EvictionStrategy, Kind, type VirtualMachineInstance, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { evictionDecision } from "@kubevirt-ts/vm-rules";
import { launcherPodOwnerKey } from "@kubevirt-ts/node-contract";
import { type AdmissionReview, admissionAnswer } from "./webhooks.ts";

// KubeVirt's pod-eviction webhook: every eviction in the cluster (kubectl
// drain, the descheduler) passes here before the API server checks it
// against PodDisruptionBudgets. An eviction of anything but a launcher pod
// of a VMI is allowed at once; for a launcher pod, the VMI's eviction
// strategy decides (vm-rules' eviction.ts): allowed, allowed with the
// VMI marked for evacuation (status.evacuationNodeName), or refused with
// 429 and the reason; a VMI that can be migrated is marked and the eviction
// refused with 429, as KubeVirt's: the controller migrates it, and the
// drain's retries find the pod gone. Only the pod the VMI runs in is
// decided so: a migration's target pod is left to the disruption budget,
// which protects both while the VMI moves. The API server calls it with failurePolicy Ignore, so
// the launcher pods that must stay are also protected by a
// PodDisruptionBudget, which the controller makes (ADR 12).
//
// The mark is a side effect anyone who reaches the webhook could ask for
// with a forged review naming someone else's launcher pod (ADR 7). Over the
// API server's verified client certificate (webhooks.clientCA) every
// eviction marks, as KubeVirt's; from an unverified caller a VMI is marked
// only when what the API's own account reads says its node is being
// drained, so a forged review can at most move VMs off a node that is being
// emptied anyway.

/** Who sent an admission review: the API server, by its client certificate, or a caller nobody verified. */
export type WebhookCaller = "verified" | "unverified";

/**
 * The taints that say a node is being emptied, by the tools that drain nodes: cordon's own, the cluster
 * autoscaler's and Karpenter's before they remove a node, KubeVirt's drain taint (its default nodeDrainTaintKey), and
 * the node controller's for a node that stopped answering. Any other NoSchedule taint (a dedicated or a GPU node's)
 * is a node's standing, not a drain, and does not count.
 */
export const DRAIN_TAINT_KEYS: ReadonlySet<string> = new Set([
  "node.kubernetes.io/unschedulable",
  "ToBeDeletedByClusterAutoscaler",
  "karpenter.sh/disrupted",
  "karpenter.sh/disruption",
  "kubevirt.io/drain",
  "node.kubernetes.io/unreachable",
  "node.kubernetes.io/not-ready",
]);

/**
 * Whether a node is being drained: cordoned (kubectl drain, cordon), or tainted by a tool that empties nodes
 * (DRAIN_TAINT_KEYS).
 */
export function nodeDraining(node: Pick<Node, "spec"> | undefined): boolean {
  if (!node) return false;
  return (
    node.spec?.unschedulable === true ||
    (node.spec?.taints ?? []).some(
      (t) => DRAIN_TAINT_KEYS.has(t.key) && (t.effect === "NoSchedule" || t.effect === "NoExecute"),
    )
  );
}

/** Why the VMI on `nodeName` is not marked for evacuation at this caller's word, or undefined when it is. */
export function markRefusal(
  caller: WebhookCaller,
  nodeName: string,
  node: Pick<Node, "spec"> | undefined,
): string | undefined {
  if (caller === "verified" || nodeDraining(node)) return undefined;
  return (
    `it was not marked for evacuation: node ${nodeName} is not being drained (not cordoned, no drain taint ` +
    "such as the autoscaler's), and the webhook's caller is not the API server verified by " +
    "webhooks.clientCA"
  );
}

const allow = (uid: string): AdmissionReview => admissionAnswer(uid, { allowed: true });

export async function reviewEviction(
  review: AdmissionReview,
  own: KubeClient,
  clusterDefault: EvictionStrategy,
  caller: WebhookCaller,
): Promise<AdmissionReview> {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  // For pods/eviction, the request names the pod being evicted.
  const { namespace, name } = request;
  if (!namespace || !name) return allow(request.uid);
  const pod = await own.find<Pod>(resources.pods, namespace, name);
  if (!pod || launcherPodOwnerKey(pod) === undefined) return allow(request.uid);
  const owner = pod.metadata.ownerReferences?.find(
    (r) => r.controller === true && r.kind === Kind.VirtualMachineInstance,
  );
  if (!owner) return allow(request.uid);
  const vmi = await own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, owner.name);
  if (vmi?.metadata.uid !== owner.uid) return allow(request.uid);
  const node = pod.spec?.nodeName;
  if (vmi.status?.nodeName !== undefined && node !== vmi.status.nodeName) return allow(request.uid);
  const decision = evictionDecision(vmi, clusterDefault);
  // A dry run (kubectl drain --dry-run=server) changes nothing, as the webhook's sideEffects (NoneOnDryRun) promise.
  const wanted = decision.evacuate && node !== undefined && !request.dryRun && vmi.status?.evacuationNodeName !== node;
  const unmarked =
    wanted && caller === "unverified"
      ? markRefusal(caller, node, await own.find<Node>(resources.nodes, undefined, node))
      : undefined;
  if (wanted && unmarked === undefined) {
    // A VMI keeps its status in the object (ADR 8): the mark is a patch of the VMI, guarded by its uid.
    await own.patch(
      kubevirtResources.virtualMachineInstances,
      namespace,
      owner.name,
      [
        { op: "test", path: "/metadata/uid", value: owner.uid },
        { op: "add", path: "/status/evacuationNodeName", value: node },
      ],
      "json",
    );
  }
  if (!decision.allow) {
    // Unmarked, the VMI stays where it is: the eviction is refused still, since the VMI must not stop.
    const message =
      unmarked === undefined
        ? decision.message
        : `The launcher pod of VMI ${namespace}/${owner.name} is not evicted, since its evictionStrategy has ` +
          `it migrate instead, but ${unmarked}: cordon the node first (kubectl drain does) to have it migrated`;
    return admissionAnswer(request.uid, {
      allowed: false,
      status: { code: 429, reason: "TooManyRequests", message, details: { causes: [] } },
    });
  }
  return allow(request.uid);
}
