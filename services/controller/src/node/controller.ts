import {
  type EventRecorder,
  type Informer,
  type KubeClient,
  type Node,
  type Pod,
  type Reconcile,
  isNotFound,
  resources,
} from "@kubevirt-ts/kube";
import {
  LAUNCHER_PODS_BY_VMI,
  NODE_UNRESPONSIVE_REASON,
  NodeAnnotation,
  NodeLabel,
  launcherPodsKeyOf,
} from "@kubevirt-ts/node-contract";
import { type VirtualMachineInstance, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { isFinalPhase, withPhase } from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";

// KubeVirt's node controller: a node whose handler has not beaten for the
// heartbeat timeout is labelled kubevirt.io/schedulable=false, so no new
// launcher pod goes there, and each of its VMIs whose launcher pod is gone
// or no longer alive on it is set Failed with the reason NodeUnresponsive
// (nobody else would: its handler is not there to report it). A node whose
// handler beats again is labelled schedulable by that handler, not here.

/** The index of VMIs by status.nodeName. */
export const VMIS_BY_NODE = "node";
export const vmisByNode = (vmi: VirtualMachineInstance): string[] =>
  vmi.status?.nodeName ? [vmi.status.nodeName] : [];

/** KubeVirt looks at every node again each minute; sooner when its heartbeat runs out before then. */
const RECHECK_MS = 60_000;

export interface NodeControllerDeps {
  client: KubeClient;
  nodes: Informer<Node>;
  /** VMIs, indexed by their node (VMIS_BY_NODE). */
  vmis: Informer<VirtualMachineInstance>;
  /** Launcher pods, indexed by their VMI (LAUNCHER_PODS_BY_VMI). */
  pods: Informer<Pod>;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
  timeoutMs: number;
}

/** When the node's handler last beat; undefined without a heartbeat, or with one that is no time. */
export function lastHeartbeat(node: Node): Date | undefined {
  const value = node.metadata.annotations?.[NodeAnnotation.Heartbeat];
  if (value === undefined) return undefined;
  const time = new Date(value);
  return Number.isNaN(time.getTime()) ? undefined : time;
}

/** A launcher pod that may still run its guest: not finished, and not every container terminated (KubeVirt's). */
function alive(pod: Pod, nodeName: string): boolean {
  if (pod.spec?.nodeName !== nodeName) return false;
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return false;
  const statuses = pod.status?.containerStatuses ?? [];
  return !(statuses.length > 0 && statuses.every((s) => s.state?.terminated !== undefined));
}

export function createNodeReconciler(deps: NodeControllerDeps): Reconcile {
  const { client, nodes, vmis, pods, recorder, log, now, timeoutMs } = deps;

  async function failOrphans(nodeName: string): Promise<void> {
    const stuck = vmis
      .byIndex(VMIS_BY_NODE, nodeName)
      .filter(
        (vmi) =>
          !isFinalPhase(vmi.status?.phase) &&
          !pods.byIndex(LAUNCHER_PODS_BY_VMI, launcherPodsKeyOf(vmi)).some((p) => alive(p, nodeName)),
      );
    // One after another, as KubeVirt's: no burst of writes while something is already wrong.
    for (const vmi of stuck) {
      recorder.record(
        vmi,
        "Normal",
        NODE_UNRESPONSIVE_REASON,
        `the handler of node ${nodeName} is not beating and the VMI's launcher pod is gone there: the VMI is Failed`,
      );
      const time = now().toISOString();
      await client
        .update<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, {
          ...vmi,
          status: { ...withPhase(vmi.status ?? {}, "Failed", time), reason: NODE_UNRESPONSIVE_REASON },
        })
        .catch((error: unknown) => {
          // Gone, or changed meanwhile: the VMI's next event brings it here again.
          if (isNotFound(error) || (error as { code?: number }).code === 409) return;
          throw error;
        });
      log.info("a VMI on a node whose handler stopped beating is Failed", {
        vmi: `${vmi.metadata.namespace ?? ""}/${vmi.metadata.name ?? ""}`,
        node: nodeName,
      });
    }
  }

  return async (nodeName) => {
    const node = nodes.get(nodeName);
    const beat = node ? lastHeartbeat(node) : undefined;
    // No heartbeat yet (no handler ever ran there): nothing to judge, as KubeVirt's. A deleted node is unresponsive.
    if (node && !beat) return undefined;
    const left = beat ? beat.getTime() + timeoutMs - now().getTime() : -1;
    if (left > 0) return { requeueAfterMs: Math.min(RECHECK_MS, left + 1_000) };
    if (node?.metadata.labels?.[NodeLabel.Schedulable] === "true") {
      recorder.record(
        { ...node, apiVersion: "v1", kind: "Node" },
        "Normal",
        NODE_UNRESPONSIVE_REASON,
        `the handler of this node has not beaten since ${beat?.toISOString() ?? "ever"}: the node takes no new VMIs`,
      );
      await client.patch(
        resources.nodes,
        undefined,
        nodeName,
        { metadata: { labels: { [NodeLabel.Schedulable]: "false" } } },
        "strategic",
      );
      log.info("a node whose handler stopped beating is unschedulable", {
        node: nodeName,
        lastHeartbeat: beat?.toISOString(),
      });
    }
    await failOrphans(nodeName);
    return node ? { requeueAfterMs: RECHECK_MS } : undefined;
  };
}
