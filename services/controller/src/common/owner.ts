import type { OwnerReference } from "@kubevirt-ts/kube";

/** The owner reference that makes `owner` the controller of an object. */
export function controllerRef(owner: { apiVersion: string; kind: string; metadata: { name?: string; uid?: string } }): OwnerReference {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name ?? "", uid: owner.metadata.uid ?? "", controller: true, blockOwnerDeletion: true };
}

export function controllerOf(object: { metadata: { ownerReferences?: OwnerReference[] } }): OwnerReference | undefined {
  return object.metadata.ownerReferences?.find((r) => r.controller === true);
}
