import type {
  CoreV1Event,
  V1NodeSpec,
  V1NodeStatus,
  V1PersistentVolumeClaimSpec,
  V1PersistentVolumeClaimStatus,
  V1PodSpec,
  V1PodStatus,
  V1Endpoint,
  V1ServiceSpec,
} from "@kubernetes/client-node";
import type { KubeObject } from "./types.ts";

// The Kubernetes core objects the components read and write, taken from
// @kubernetes/client-node's models (every field under its Kubernetes name)
// in the form they travel in: our client hands over the API server's JSON,
// where the models' Date fields are RFC 3339 strings.

/** A model as JSON carries it: its Date fields are strings. */
export type Wire<T> = T extends Date
  ? string
  : T extends readonly (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

export type PodSpec = Wire<V1PodSpec>;
export type PodStatus = Wire<V1PodStatus>;

export interface Pod extends KubeObject {
  spec?: PodSpec;
  status?: PodStatus;
}

/** Whether a pod is Running with its Ready condition True: its containers' readiness probes pass. */
export function podReady(pod: Pod | undefined): boolean {
  return (
    pod?.status?.phase === "Running" &&
    (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

export interface PersistentVolumeClaim extends KubeObject {
  spec?: Wire<V1PersistentVolumeClaimSpec>;
  status?: Wire<V1PersistentVolumeClaimStatus>;
}

export interface Node extends KubeObject {
  spec?: Wire<V1NodeSpec>;
  status?: Wire<V1NodeStatus>;
}

/** A core/v1 Secret: `data`'s values are base64, as the API server keeps them. */
export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** A core/v1 Service. */
export interface Service extends KubeObject {
  spec?: Wire<V1ServiceSpec>;
}

/** A discovery.k8s.io/v1 EndpointSlice: where a Service routes (labelled kubernetes.io/service-name). */
export interface EndpointSlice extends KubeObject {
  addressType?: string;
  endpoints?: Wire<V1Endpoint>[];
}

/** The label an EndpointSlice names its Service by. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** Whether an EndpointSlice of the Service routes to the pod: it lists the pod's endpoint as ready. */
export const slicesRouteToPod = (slices: readonly EndpointSlice[], pod: KubeObject): boolean =>
  slices.some((slice) =>
    (slice.endpoints ?? []).some(
      (e) => e.targetRef?.kind === "Pod" && e.targetRef.uid === pod.metadata.uid && e.conditions?.ready === true,
    ),
  );

type EventFields = Wire<Omit<CoreV1Event, "apiVersion" | "kind" | "metadata">>;

/** A core/v1 Event (what `kubectl describe` shows under Events). */
export interface Event extends KubeObject, EventFields {}
