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
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

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

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { namespace: "", name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
