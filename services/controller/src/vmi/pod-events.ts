import {
  type EventHandler,
  type EventRecorder,
  type Expectations,
  type Informer,
  type KubeClient,
  type Pod,
  type WorkQueue,
  isNotFound,
  keyOf,
} from "@kubevirt-ts/kube";
import { EventReason, Kind, Label, type VirtualMachineInstance, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import {
  UNOWNED_LAUNCHER_PODS_METRIC,
  isLauncherPodOf,
  launcherPodProblem,
  unownedLauncherPodReason,
} from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import { Gauge, type Registry } from "prom-client";
import { controllerOf } from "../common/owner.ts";

// What a change to a launcher-labelled pod means for the VMI controller:
// which VMIs look again, which expectations it meets, and, for a pod no VMI
// owns, a warning Event on that pod and a metric. Only pods a VMI owns
// (isLauncherPodOf) ever count for it; a pod that only claims a VMI by label
// still makes that VMI look again, so that nothing waits on it.

export const VMIS_BY_UID = "uid";

/** The VMI informer's index by UID, to find the VMI a pod's label names. */
export function vmisByUid(vmi: VirtualMachineInstance): string[] {
  return vmi.metadata.uid ? [vmi.metadata.uid] : [];
}

/**
 * The keys of the VMIs a pod concerns: the one that controls it in its namespace, and the ones its created-by label
 * names.
 */
function vmiKeysOf(pod: Pod, vmis: Informer<VirtualMachineInstance>): Set<string> {
  const keys = new Set<string>();
  const ref = controllerOf(pod);
  if (ref?.kind === Kind.VirtualMachineInstance) keys.add(`${pod.metadata.namespace ?? ""}/${ref.name}`);
  const claimed = pod.metadata.labels?.[Label.CreatedBy];
  if (claimed) for (const vmi of vmis.byIndex(VMIS_BY_UID, claimed)) keys.add(keyOf(vmi));
  return keys;
}

/** Enqueues the VMIs a pod concerns; a pod's arrival or removal meets its own VMI's expectations. */
export function launcherPodEvents(
  queue: WorkQueue,
  vmis: Informer<VirtualMachineInstance>,
  expectations: Expectations,
): EventHandler<Pod> {
  const observe = (pod: Pod, type: "add" | "delete") => {
    for (const key of vmiKeysOf(pod, vmis)) {
      const vmi = vmis.get(key);
      if (vmi && isLauncherPodOf(pod, vmi)) {
        if (type === "add") expectations.creationObserved(key);
        else expectations.deletionObserved(key);
      }
      queue.add(key);
    }
  };
  return {
    add: (pod) => {
      observe(pod, "add");
    },
    update: (previous, current) => {
      // As KubeVirt counts it: a pod being deleted is a deletion observed, and so is a deletion made shorter (a forced
      // stop hurrying a pod already going); otherwise the VMI would wait the pod's whole grace period to be looked at.
      const deleted =
        current.metadata.deletionTimestamp &&
        (!previous.metadata.deletionTimestamp ||
          previous.metadata.deletionGracePeriodSeconds !== current.metadata.deletionGracePeriodSeconds);
      if (deleted) {
        for (const key of vmiKeysOf(current, vmis)) {
          const vmi = vmis.get(key);
          if (vmi && isLauncherPodOf(current, vmi)) expectations.deletionObserved(key);
        }
      }
      for (const key of new Set([...vmiKeysOf(previous, vmis), ...vmiKeysOf(current, vmis)])) queue.add(key);
    },
    delete: (pod) => {
      observe(pod, "delete");
    },
  };
}

export interface UnownedPods {
  handler: EventHandler<Pod>;
  /** Starts reporting (the leader only), beginning with the pods already cached. */
  start(cached: Pod[]): void;
}

export interface UnownedPodsDeps {
  client: KubeClient;
  pods: Informer<Pod>;
  vmis: Informer<VirtualMachineInstance>;
  recorder: EventRecorder;
  log: Logger;
  registry: Registry;
}

/**
 * Reports each pod with the launcher label that belongs to no VMI there is: one Warning event on the pod, and the
 * gauge.
 */
export function unownedLauncherPods({ client, pods, vmis, recorder, log, registry }: UnownedPodsDeps): UnownedPods {
  const problemOf = (pod: Pod) => launcherPodProblem(pod, (namespace, name) => vmis.get(`${namespace}/${name}`));
  new Gauge({
    ...UNOWNED_LAUNCHER_PODS_METRIC,
    registers: [registry],
    collect() {
      this.set(pods.list().filter((p) => problemOf(p) !== undefined).length);
    },
  });
  /** The problem again, with the VMI the pod names read from the API server: the VMI cache may not have it yet. */
  const confirmed = async (pod: Pod, seen: string): Promise<string | undefined> => {
    const name = controllerOf(pod)?.name;
    if (unownedLauncherPodReason(pod) !== undefined || name === undefined) return seen;
    const live = await client
      .get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, pod.metadata.namespace, name)
      .catch((error: unknown) => {
        if (isNotFound(error)) return undefined;
        throw error;
      });
    return launcherPodProblem(pod, () => live);
  };
  const reported = new Set<string>();
  let active = false;
  const observe = (pod: Pod) => {
    const uid = pod.metadata.uid ?? "";
    const seen = active && !reported.has(uid) ? problemOf(pod) : undefined;
    if (seen === undefined) return;
    reported.add(uid);
    confirmed(pod, seen).then(
      (reason) => {
        if (reason === undefined) {
          reported.delete(uid);
          return;
        }
        log.warn("a pod with the launcher label belongs to no VMI; ignoring it", { pod: keyOf(pod), reason });
        recorder.record({ ...pod, apiVersion: "v1", kind: "Pod" }, "Warning", EventReason.UnownedLauncherPod, reason);
      },
      (error: unknown) => {
        // Looked at again at the next change or resync.
        reported.delete(uid);
        log.warn("could not check the VMI a launcher pod names", { pod: keyOf(pod), error });
      },
    );
  };
  return {
    handler: {
      add: observe,
      update: (_, pod) => {
        observe(pod);
      },
      delete: (pod) => {
        reported.delete(pod.metadata.uid ?? "");
      },
    },
    start: (cached) => {
      active = true;
      for (const pod of cached) observe(pod);
    },
  };
}
