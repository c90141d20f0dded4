import { GROUP, Resource, VERSION } from "@kubevirt-ts/kubevirt-api";

/** Where a kind lives in the API: its group, version and plural name. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

export const resources = {
  virtualMachines: { group: GROUP, version: VERSION, plural: Resource.VirtualMachine.plural, namespaced: true },
  virtualMachineInstances: { group: GROUP, version: VERSION, plural: Resource.VirtualMachineInstance.plural, namespaced: true },
  pods: { group: "", version: "v1", plural: "pods", namespaced: true },
  events: { group: "", version: "v1", plural: "events", namespaced: true },
  leases: { group: "coordination.k8s.io", version: "v1", plural: "leases", namespaced: true },
  nodes: { group: "", version: "v1", plural: "nodes", namespaced: false },
  namespaces: { group: "", version: "v1", plural: "namespaces", namespaced: false },
  selfSubjectAccessReviews: { group: "authorization.k8s.io", version: "v1", plural: "selfsubjectaccessreviews", namespaced: false },
  selfSubjectReviews: { group: "authentication.k8s.io", version: "v1", plural: "selfsubjectreviews", namespaced: false },
} as const satisfies Record<string, ResourceType>;

/** The path of a collection or of one object, e.g. /apis/kubevirt.io/v1/namespaces/ns/virtualmachines/vm/status. */
export function resourcePath(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const ns = type.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const object = name === undefined ? "" : `/${encodeURIComponent(name)}`;
  const sub = subresource === undefined ? "" : `/${subresource}`;
  return `${base}${ns}/${type.plural}${object}${sub}`;
}
