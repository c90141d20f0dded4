import {
  type EventRecorder, type Expectations, type Informer, type KubeClient, type Reconcile, addFinalizer, findCondition, isNotFound, keyOf, removeFinalizer, resources, writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import { EventReason, Finalizer, Label, type VirtualMachineInstance, VmiConditionType, summarize, validateVirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";

import { type VmiAction, decideVmi, deriveVmiStatus } from "./decide.ts";
import { type LauncherPodConfig, type Pod, launcherPod } from "./pod.ts";

// The VirtualMachineInstance controller: one launcher pod per VMI, the phases
// up to Scheduled (when the pod runs and the launcher is ready, the VMI gets
// its node and the handler there takes over), failure when the pod fails or
// disappears, and the pod's removal when the VMI goes.

export interface VmiControllerDeps {
  client: KubeClient;
  vmis: Informer<VirtualMachineInstance>;
  /** Launcher pods, indexed by the UID of the VMI that created them. */
  pods: Informer<Pod>;
  expectations: Expectations;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
  pod: LauncherPodConfig;
}

export const PODS_BY_VMI_UID = "vmiUid";

/** The index that finds a VMI's launcher pods. */
export function podsByVmiUid(pod: Pod): string[] {
  const uid = pod.metadata.labels?.[Label.CreatedBy];
  return uid ? [uid] : [];
}

export function createVmiReconciler(deps: VmiControllerDeps): Reconcile {
  const { client, vmis, pods, expectations, recorder, log, now } = deps;

  async function execute(vmi: VirtualMachineInstance, action: VmiAction, key: string): Promise<void> {
    if (action.kind === "createPod") {
      expectations.expectCreations(key, 1);
      try {
        const pod = await client.create<Pod>(resources.pods, vmi.metadata.namespace, launcherPod(vmi, deps.pod));
        recorder.record(vmi, "Normal", EventReason.SuccessfulCreate, `Created virtual machine pod ${pod.metadata.name ?? ""}`);
      } catch (error) {
        expectations.creationObserved(key);
        recorder.record(vmi, "Warning", EventReason.FailedCreate, `Error creating pod: ${String(error)}`);
        throw error;
      }
    } else if (action.kind === "deletePods") {
      for (const pod of action.pods) {
        expectations.expectDeletions(key, 1);
        try {
          await client.delete(resources.pods, pod.metadata.namespace, pod.metadata.name ?? "", { uid: pod.metadata.uid });
          recorder.record(vmi, "Normal", EventReason.SuccessfulDelete, `Deleted virtual machine pod ${pod.metadata.name ?? ""}`);
        } catch (error) {
          expectations.deletionObserved(key);
          if (!isNotFound(error)) throw error;
        }
      }
    }
  }

  return async (key) => {
    const cached = vmis.get(key);
    if (!cached) {
      expectations.deleteExpectations(key);
      return undefined;
    }
    // A pod created with generateName may not be in the cache yet: deciding now could create a second one.
    if (!expectations.satisfied(key)) return { requeueAfterMs: 2_000 };
    const owned = pods
      .byIndex(PODS_BY_VMI_UID, cached.metadata.uid ?? "")
      .sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""));

    if (cached.metadata.deletionTimestamp) {
      await execute(cached, decideVmi({ vmi: cached, pods: owned, invalid: undefined, now: now() }), key);
      if (owned.length === 0) await removeFinalizer(client, resources.virtualMachineInstances, cached, Finalizer.VmiController);
      return undefined;
    }
    const vmi = await addFinalizer(client, resources.virtualMachineInstances, cached, Finalizer.VmiController);
    const validation = validateVirtualMachineInstance(vmi);
    const invalid = validation.ok ? undefined : summarize(validation.causes);
    if (invalid !== undefined && findCondition(vmi.status?.conditions, VmiConditionType.Synchronized)?.reason !== "InvalidSpec") {
      recorder.record(vmi, "Warning", EventReason.InvalidSpec, invalid);
      log.warn("the VMI's spec is invalid; waiting for it to change", { vmi: keyOf(vmi), causes: invalid });
    }
    const observation = { vmi, pods: owned, invalid, now: now() };
    await execute(vmi, decideVmi(observation), key);
    const status = deriveVmiStatus(observation);
    // The label lets the handler of the node watch its own VMIs only, as KubeVirt's does.
    const labelled = status.nodeName && vmi.metadata.labels?.[Label.NodeName] !== status.nodeName
      ? await client.patch<VirtualMachineInstance>(resources.virtualMachineInstances, vmi.metadata.namespace, vmi.metadata.name ?? "", { metadata: { labels: { [Label.NodeName]: status.nodeName } } }, "merge")
      : vmi;
    const written = await writeStatusIfChanged(client, resources.virtualMachineInstances, labelled, status);
    if (written && status.phase !== vmi.status?.phase) {
      recorder.record(vmi, "Normal", status.phase ?? "", `The VMI is ${status.phase ?? ""}${status.nodeName && status.phase === "Scheduled" ? ` on node ${status.nodeName}` : ""}.`);
    }
    return undefined;
  };
}
