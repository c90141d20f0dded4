import type { Logger } from "@kubevirt-ts/runtime";
import { resources } from "../client/resources.ts";
import type { KubeClient } from "../client/rest.ts";
import type { Event } from "../client/core.ts";
import { type KubeObject, kubeTime } from "../client/types.ts";

// Kubernetes Events about the objects a controller acts on, so that
// `kubectl describe` and the dashboard show what happened and why. Recording
// never fails the caller: an event that cannot be written is logged.

export type EventType = "Normal" | "Warning";

export interface EventRecorder {
  record(object: KubeObject, type: EventType, reason: string, message: string): void;
}

/**
 * A recorder whose events name `source`: a component, or a component and the node it records from (a DaemonSet's,
 * as KubeVirt's handler names its node).
 */
export function createEventRecorder(
  client: KubeClient,
  source: string | { component: string; host: string },
  log: Logger,
  now: () => Date = () => new Date(),
): EventRecorder {
  const { component, host } = typeof source === "string" ? { component: source, host: undefined } : source;
  return {
    record(object, type, reason, message) {
      const { namespace = "default", name = "", uid, resourceVersion } = object.metadata;
      const time = kubeTime(now());
      client
        .create<Event>(resources.events, namespace, {
          apiVersion: "v1",
          kind: "Event",
          metadata: { generateName: `${name}.`, namespace },
          involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name, namespace, uid, resourceVersion },
          type,
          reason,
          message,
          source: host === undefined ? { component } : { component, host },
          reportingComponent: component,
          ...(host === undefined ? {} : { reportingInstance: host }),
          firstTimestamp: time,
          lastTimestamp: time,
          count: 1,
        })
        .catch((error: unknown) => {
          log.warn("could not record an event", { reason, object: `${namespace}/${name}`, error });
        });
    },
  };
}
