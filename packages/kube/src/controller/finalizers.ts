import type { ResourceType } from "../client/resources.ts";
import type { KubeClient } from "../client/rest.ts";
import type { KubeObject } from "../client/types.ts";

// Finalizers are added and removed with a JSON patch whose first operation
// tests the list it read: if anyone changed the finalizers meanwhile, the
// patch fails (422) instead of overwriting their change, and the controller
// tries again from a fresh read.

export function hasFinalizer(object: KubeObject, finalizer: string): boolean {
  return object.metadata.finalizers?.includes(finalizer) ?? false;
}

function finalizerPatch(object: KubeObject, next: string[]): unknown[] {
  const current = object.metadata.finalizers;
  return current === undefined
    ? [{ op: "add", path: "/metadata/finalizers", value: next }]
    : [
        { op: "test", path: "/metadata/finalizers", value: current },
        { op: "replace", path: "/metadata/finalizers", value: next },
      ];
}

export async function addFinalizer<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  finalizer: string,
): Promise<T> {
  if (hasFinalizer(object, finalizer)) return object;
  const { namespace, name = "" } = object.metadata;
  return client.patch<T>(
    type,
    namespace,
    name,
    finalizerPatch(object, [...(object.metadata.finalizers ?? []), finalizer]),
    "json",
  );
}

export async function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  finalizer: string,
): Promise<T> {
  if (!hasFinalizer(object, finalizer)) return object;
  const { namespace, name = "" } = object.metadata;
  return client.patch<T>(
    type,
    namespace,
    name,
    finalizerPatch(
      object,
      (object.metadata.finalizers ?? []).filter((f) => f !== finalizer),
    ),
    "json",
  );
}
