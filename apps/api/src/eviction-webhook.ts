import { type KubeClient, type Pod, resources } from "@kubevirt-ts/kube";
import {
  type EvictionStrategy, Kind, type VirtualMachineInstance, evictionDecision, kubevirtResources, launcherPodOwnerKey,
} from "@kubevirt-ts/kubevirt-api";
import { type AdmissionReview, admissionAnswer } from "./webhooks.ts";

// KubeVirt's pod-eviction webhook: every eviction in the cluster (kubectl
// drain, the descheduler) passes here before the API server checks it
// against PodDisruptionBudgets. An eviction of anything but a launcher pod
// of a VMI is allowed at once; for a launcher pod, the VMI's eviction
// strategy decides (kubevirt-api's eviction.ts): allowed, allowed with the
// VMI marked for evacuation (status.evacuationNodeName), or refused with
// 429 and the reason; a VMI that can be migrated is marked and the eviction
// refused with 429, as KubeVirt's: the controller migrates it, and the
// drain's retries find the pod gone. Only the pod the VMI runs in is
// decided so: a migration's target pod is left to the disruption budget,
// which protects both while the VMI moves. The API server calls it with failurePolicy Ignore, so
// the launcher pods that must stay are also protected by a
// PodDisruptionBudget, which the controller makes (ADR 12).

const allow = (uid: string): AdmissionReview => admissionAnswer(uid, { allowed: true });

export async function reviewEviction(review: AdmissionReview, own: KubeClient, clusterDefault: EvictionStrategy): Promise<AdmissionReview> {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  // For pods/eviction, the request names the pod being evicted.
  const { namespace, name } = request;
  if (!namespace || !name) return allow(request.uid);
  const pod = await own.find<Pod>(resources.pods, namespace, name);
  if (!pod || launcherPodOwnerKey(pod) === undefined) return allow(request.uid);
  const owner = pod.metadata.ownerReferences?.find((r) => r.controller === true && r.kind === Kind.VirtualMachineInstance);
  if (!owner) return allow(request.uid);
  const vmi = await own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, owner.name);
  if (vmi?.metadata.uid !== owner.uid) return allow(request.uid);
  const node = pod.spec?.nodeName;
  if (vmi.status?.nodeName !== undefined && node !== vmi.status.nodeName) return allow(request.uid);
  const decision = evictionDecision(vmi, clusterDefault);
  // A dry run (kubectl drain --dry-run=server) changes nothing, as the webhook's sideEffects (NoneOnDryRun) promise.
  if (decision.evacuate && node && !request.dryRun && vmi.status?.evacuationNodeName !== node) {
    // A VMI keeps its status in the object (ADR 8): the mark is a patch of the VMI, guarded by its uid.
    await own.patch(kubevirtResources.virtualMachineInstances, namespace, owner.name, [
      { op: "test", path: "/metadata/uid", value: owner.uid },
      { op: "add", path: "/status/evacuationNodeName", value: node },
    ], "json");
  }
  if (!decision.allow) {
    return admissionAnswer(request.uid, { allowed: false, status: { code: 429, reason: "TooManyRequests", message: decision.message, details: { causes: [] } } });
  }
  return allow(request.uid);
}
