import { setTimeout as sleep } from "node:timers/promises";
import { type KubeClient, type Node, resources } from "@kubevirt-ts/kube";
import { NodeAnnotation, NodeLabel, isNodeLabellerLabel } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";

// The handler's heartbeat, as KubeVirt's: its node labelled
// kubevirt.io/schedulable=true and annotated with the time, at start and
// then every interval (with KubeVirt's jitter: up to 2.2 intervals apart), so
// launcher pods go only to nodes whose handler runs, and the controller's
// node controller notices a handler that stopped beating. With each beat the
// node labeller's labels are put on the node and the ones it no longer finds
// taken off. On a graceful stop the node is labelled unschedulable, as
// KubeVirt's handler does. The chart's node restriction keeps a handler's
// writes to its own node and to these keys (handler-node-restriction.yaml).

/** KubeVirt's heartbeat interval; the chart's nodeHeartbeat.intervalSeconds sets it. */
export const DEFAULT_HEARTBEAT_INTERVAL_SECONDS = 60;
/** KubeVirt's jitter factor: the next beat comes between one and 2.2 intervals later. */
const JITTER = 1.2;

export interface HeartbeatOptions {
  client: KubeClient;
  nodeName: string;
  intervalMs: number;
  log: Logger;
  /** The node labeller's labels (undefined: none found; the node's are left as they are). */
  labels?: () => Promise<Record<string, string> | undefined>;
  /** Whether the node may take VMIs now (e.g. its device plugins are up); always, when unset. */
  schedulable?: () => boolean;
  now?: () => Date;
  random?: () => number;
}

/**
 * The merge patch of one beat: the heartbeat, and the labeller's labels replacing those of the node it no longer has.
 */
export function heartbeatPatch(
  node: Node | undefined,
  options: { schedulable: boolean; now: Date; labels: Record<string, string> | undefined },
): { metadata: { labels: Record<string, string | null>; annotations: Record<string, string> } } {
  const labels: Record<string, string | null> = {};
  if (options.labels) {
    for (const key of Object.keys(node?.metadata.labels ?? {}))
      if (isNodeLabellerLabel(key) && !(key in options.labels)) labels[key] = null;
    Object.assign(labels, options.labels);
  }
  labels[NodeLabel.Schedulable] = String(options.schedulable);
  // RFC 3339 to the second, as Kubernetes' metav1.Time writes it.
  return {
    metadata: {
      labels,
      annotations: { [NodeAnnotation.Heartbeat]: options.now.toISOString().replace(/\.\d+Z$/, "Z") },
    },
  };
}

export interface Heartbeat {
  /** Resolves after the first beat was written (or failed and was logged). */
  first: Promise<void>;
  /** Stops beating and labels the node unschedulable (bounded: a few seconds at most). */
  stop(): Promise<void>;
}

export function startHeartbeat(o: HeartbeatOptions): Heartbeat {
  const now = o.now ?? (() => new Date());
  const random = o.random ?? Math.random;
  const abort = new AbortController();
  const beat = async (schedulable: boolean, withLabels: boolean) => {
    const labels =
      withLabels && o.labels
        ? await o.labels().catch((error: unknown) => {
            o.log.warn("the node labeller's files could not be read; the node keeps its labels", {
              error: String(error),
            });
            return undefined;
          })
        : undefined;
    const node = labels ? await o.client.get<Node>(resources.nodes, undefined, o.nodeName) : undefined;
    await o.client.patch(
      resources.nodes,
      undefined,
      o.nodeName,
      heartbeatPatch(node, { schedulable, now: now(), labels }),
      "merge",
    );
  };
  const once = () =>
    beat(o.schedulable?.() ?? true, true).then(
      () => {
        o.log.debug("heartbeat sent", { node: o.nodeName });
      },
      (error: unknown) => {
        o.log.warn("the heartbeat could not be written to the node", { node: o.nodeName, error: String(error) });
      },
    );
  const first = once();
  const loop = (async () => {
    await first;
    // Each wait ends early, rejected, when the handler stops.
    for (;;) {
      const waited = await sleep(o.intervalMs * (1 + random() * JITTER), true, { signal: abort.signal }).catch(
        () => false,
      );
      if (!waited) break;
      await once();
    }
  })();
  return {
    first,
    stop: async () => {
      abort.abort();
      await loop;
      await Promise.race([
        beat(false, false).catch((error: unknown) => {
          o.log.warn("the node could not be labelled unschedulable on the way out", {
            node: o.nodeName,
            error: String(error),
          });
        }),
        sleep(5_000),
      ]);
    },
  };
}
