import type { OwnerReference } from "@kubevirt-ts/kube";

/** The owner reference that controls an object, if one does (kubevirt-api's controllerRef makes them). */
export function controllerOf(object: { metadata: { ownerReferences?: OwnerReference[] } }): OwnerReference | undefined {
  return object.metadata.ownerReferences?.find((r) => r.controller === true);
}
