import { API_VERSION, Kind, Label, LabelValue } from "@kubevirt-ts/kubevirt-api";

// Which VMI a launcher pod belongs to. Labels are only a claim: anyone who
// may create pods can put `kubevirt.io=virt-launcher` and
// `kubevirt.io/created-by=<uid>` on one, in any namespace. A pod belongs to
// a VMI only when that VMI is its controller (the ownerReference the
// controller writes when it creates the pod, as KubeVirt requires since
// CVE-2025-64435) and the two are in the same namespace, where owner
// references are resolved. The controller, the handler and the console all
// decide with these functions and nothing else.

interface PodRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

/** The parts of a pod this rule reads. */
export interface LauncherPodMeta {
  metadata: { namespace?: string; uid?: string; labels?: Record<string, string>; ownerReferences?: readonly PodRef[] };
}

/** The parts of a VMI this rule reads. */
export interface VmiIdentity {
  metadata: { namespace?: string; uid?: string };
}

/** The key under which a VMI's launcher pods are indexed: its namespace and UID. */
export function launcherPodsKeyOf(vmi: VmiIdentity): string {
  return `${vmi.metadata.namespace ?? ""}/${vmi.metadata.uid ?? ""}`;
}

/**
 * Why a pod carrying the launcher label belongs to no VMI, in a sentence; undefined
 * when it does belong to one (or is no launcher pod at all).
 */
export function unownedLauncherPodReason(pod: LauncherPodMeta): string | undefined {
  if (pod.metadata.labels?.[Label.App] !== LabelValue.Launcher) return undefined;
  const controller = pod.metadata.ownerReferences?.find((r) => r.controller === true);
  const claimed = pod.metadata.labels[Label.CreatedBy];
  if (!controller) {
    return (
      "The pod carries the " +
      `label ${Label.App}=${LabelValue.Launcher}${claimed ? ` and claims VMI uid ${claimed}` : ""}, but no ` +
      "VirtualMachineInstance controls it (it has no controller ownerReference); kubevirt-ts ignores it."
    );
  }
  if (controller.kind !== Kind.VirtualMachineInstance || controller.apiVersion !== API_VERSION || !controller.uid) {
    return (
      `The pod carries the label ${Label.App}=${LabelValue.Launcher}, but its controller ` +
      `is ${controller.kind} ${controller.name} (${controller.apiVersion}), not a ${API_VERSION} ` +
      "VirtualMachineInstance; kubevirt-ts ignores it."
    );
  }
  if (claimed !== controller.uid) {
    return (
      `The pod's label ${Label.CreatedBy} (${claimed ?? "missing"}) does not name the VMI that controls it ` +
      `(${controller.name}, uid ${controller.uid}); kubevirt-ts ignores it.`
    );
  }
  return undefined;
}

/** The index key of the VMI a launcher pod belongs to (see launcherPodsKeyOf), or undefined when it belongs to none. */
export function launcherPodOwnerKey(pod: LauncherPodMeta): string | undefined {
  if (pod.metadata.labels?.[Label.App] !== LabelValue.Launcher || unownedLauncherPodReason(pod) !== undefined)
    return undefined;
  const controller = pod.metadata.ownerReferences?.find((r) => r.controller === true);
  return controller
    ? launcherPodsKeyOf({ metadata: { namespace: pod.metadata.namespace, uid: controller.uid } })
    : undefined;
}

/** The name under which the controller's and the handler's pod informers index launcher pods with launcherPodIndex. */
export const LAUNCHER_PODS_BY_VMI = "vmi";

/** The index function for launcher pods: the key of the VMI the pod belongs to, if any. */
export function launcherPodIndex(pod: LauncherPodMeta): string[] {
  const key = launcherPodOwnerKey(pod);
  return key === undefined ? [] : [key];
}

/** Whether the pod is a launcher pod the controller made for this VMI. */
export function isLauncherPodOf(pod: LauncherPodMeta, vmi: VmiIdentity): boolean {
  return Boolean(vmi.metadata.uid) && launcherPodOwnerKey(pod) === launcherPodsKeyOf(vmi);
}

/**
 * Why a launcher-labelled pod belongs to no VMI, where `vmiNamed` finds the
 * VMI of a name in the pod's namespace: unownedLauncherPodReason, or, for a
 * pod whose controller reference names a VMI that is not there (say, a copy
 * of a real pod's references planted in another namespace), a sentence
 * saying so. Undefined for a pod of a VMI that exists.
 */
export function launcherPodProblem(
  pod: LauncherPodMeta,
  vmiNamed: (namespace: string, name: string) => VmiIdentity | undefined,
): string | undefined {
  const unowned = unownedLauncherPodReason(pod);
  const controller = pod.metadata.ownerReferences?.find((r) => r.controller === true);
  if (unowned !== undefined || !controller || launcherPodOwnerKey(pod) === undefined) return unowned;
  const namespace = pod.metadata.namespace ?? "";
  const owner = vmiNamed(namespace, controller.name);
  if (owner && isLauncherPodOf(pod, owner)) return undefined;
  return (
    `The pod names VMI ${controller.name} (uid ${controller.uid}) as its controller, but no such VMI ` +
    `exists in namespace ${namespace}; kubevirt-ts ignores it.`
  );
}

/** The metric both the controller and the handler expose: launcher-labelled pods in their caches that no VMI owns. */
export const UNOWNED_LAUNCHER_PODS_METRIC = {
  name: "kubevirt_ts_unowned_launcher_pods",
  help:
    "Pods labelled kubevirt.io=virt-launcher that no VirtualMachineInstance controls; they are " +
    "ignored (see the UnownedLauncherPod events on them).",
} as const;
