/** Where a kind lives in the API: its group, version and plural name. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
  /**
   * False for a kind whose status lives in the object itself, written with the object (KubeVirt's VMIs): then a
   * status and metadata go in one write. Otherwise status is its own subresource.
   */
  statusSubresource?: boolean;
}

/** Core and built-in kinds; a domain package describes its own custom resources the same way. */
export const resources = {
  pods: { group: "", version: "v1", plural: "pods", namespaced: true },
  events: { group: "", version: "v1", plural: "events", namespaced: true },
  secrets: { group: "", version: "v1", plural: "secrets", namespaced: true },
  services: { group: "", version: "v1", plural: "services", namespaced: true },
  endpointSlices: { group: "discovery.k8s.io", version: "v1", plural: "endpointslices", namespaced: true },
  leases: { group: "coordination.k8s.io", version: "v1", plural: "leases", namespaced: true },
  nodes: { group: "", version: "v1", plural: "nodes", namespaced: false },
  namespaces: { group: "", version: "v1", plural: "namespaces", namespaced: false },
  configMaps: { group: "", version: "v1", plural: "configmaps", namespaced: true },
  persistentVolumeClaims: { group: "", version: "v1", plural: "persistentvolumeclaims", namespaced: true },
  podDisruptionBudgets: { group: "policy", version: "v1", plural: "poddisruptionbudgets", namespaced: true },
  deployments: { group: "apps", version: "v1", plural: "deployments", namespaced: true },
  daemonSets: { group: "apps", version: "v1", plural: "daemonsets", namespaced: true },
  selfSubjectAccessReviews: {
    group: "authorization.k8s.io",
    version: "v1",
    plural: "selfsubjectaccessreviews",
    namespaced: false,
  },
  subjectAccessReviews: {
    group: "authorization.k8s.io",
    version: "v1",
    plural: "subjectaccessreviews",
    namespaced: false,
  },
  selfSubjectReviews: {
    group: "authentication.k8s.io",
    version: "v1",
    plural: "selfsubjectreviews",
    namespaced: false,
  },
  tokenReviews: { group: "authentication.k8s.io", version: "v1", plural: "tokenreviews", namespaced: false },
} as const satisfies Record<string, ResourceType>;

/** The path of a collection or of one object, e.g. /apis/kubevirt.io/v1/namespaces/ns/virtualmachines/vm/status. */
export function resourcePath(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const ns = type.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const object = name === undefined ? "" : `/${encodeURIComponent(name)}`;
  const sub = subresource === undefined ? "" : `/${subresource}`;
  return `${base}${ns}/${type.plural}${object}${sub}`;
}
