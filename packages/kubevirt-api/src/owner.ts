// The owner reference that makes `owner` the controller of an object: the
// VM of its VMI, DataVolumes and ControllerRevisions, a VMI of its pod, a
// DataVolume of its claim and importer pod. Garbage collection removes the
// object with its owner, after it (blockOwnerDeletion).

export interface ControllerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: true;
  blockOwnerDeletion: true;
}

export function controllerRef(owner: {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; uid?: string };
}): ControllerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}
