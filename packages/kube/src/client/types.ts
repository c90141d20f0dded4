import type { V1OwnerReference } from "@kubernetes/client-node";

// The parts of Kubernetes objects the client and informers rely on.

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string | null;
  /** The grace period the object was deleted with; set with deletionTimestamp. */
  deletionGracePeriodSeconds?: number | null;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  /** Which manager set which field; informers drop it from what they cache. */
  managedFields?: unknown[];
}

/** An owner reference, as @kubernetes/client-node's model has it (it holds no dates). */
export type OwnerReference = V1OwnerReference;

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface ObjectList<T> {
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/** A Kubernetes Status, as the API server returns with errors. */
export interface Status {
  kind?: "Status";
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { causes?: { field?: string; message?: string; reason?: string }[] };
}

/** The namespace/name key of an object, or its name alone when it has no namespace. */
export function keyOf(object: { metadata: ObjectMeta }): string {
  const { namespace, name = "" } = object.metadata;
  return namespace ? `${namespace}/${name}` : name;
}

/** A time as Kubernetes writes metav1.Time: RFC 3339 in UTC, whole seconds. */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
