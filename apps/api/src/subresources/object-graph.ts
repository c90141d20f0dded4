import type { IncomingMessage } from "node:http";
import { type KubeClient, type Pod, resources } from "@kubevirt-ts/kube";
import {
  InstancetypeKind,
  Kind,
  Label,
  LabelValue,
  SUBRESOURCE_GROUP,
  type InstancetypeStatusRef,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VmiSpec,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { isLauncherPodOf } from "@kubevirt-ts/node-contract";
import { backendStorageClaimName, needsBackendStorage } from "@kubevirt-ts/vm-rules";
import type { Check, Requester } from "../access.ts";
import { limits } from "../limits.ts";
import { readBody } from "../read-body.ts";
import { ActionRefusal, authorize, parseRequestJson } from "../vm-actions.ts";

// KubeVirt's objectgraph subresource of VMs and VMIs (virtctl objectgraph): the objects a VM or VMI depends on, as a
// tree of typed references, each labelled with the kind of dependency (storage, compute, config), for backup and
// disaster-recovery tools. KubeVirt builds it from the VM: its VMI and launcher pod, instancetype and preference with
// their ControllerRevisions, access-credential Secrets, and the volumes' DataVolumes, claims (the backend-storage one
// too), ConfigMaps and Secrets. kubevirt-ts builds the same from what it has (no Multus networks, no IPAMClaims); the
// ObjectGraph feature gate is always on here. The user needs get on <resource>/objectgraph; the objects are read with
// virt-api's own account, as KubeVirt's virt-api reads them.

export const OBJECT_GRAPH_SUBRESOURCE = "objectgraph";

/** KubeVirt's label on each node: what the dependency is for. */
export const DEPENDENCY_TYPE_LABEL = "kubevirt.io/dependency-type";
type DependencyType = "storage" | "compute" | "config";

export interface ObjectGraphNode {
  objectReference: { apiGroup: string; kind: string; name: string; namespace: string };
  labels: Record<string, string>;
  optional?: boolean;
  children?: ObjectGraphNode[];
}

interface LabelSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

/** KubeVirt's ObjectGraphOptions: optional nodes left out only when includeOptionalNodes is false. */
export interface ObjectGraphOptions {
  includeOptionalNodes?: boolean;
  labelSelector?: { matchLabels?: Record<string, string>; matchExpressions?: LabelSelectorRequirement[] };
}

/** Each kind a node may be, by resource: its group, kind and dependency type (KubeVirt's). */
const NODE_KINDS = {
  virtualmachines: { apiGroup: "kubevirt.io", kind: Kind.VirtualMachine, type: "compute" },
  virtualmachineinstances: { apiGroup: "kubevirt.io", kind: Kind.VirtualMachineInstance, type: "compute" },
  pods: { apiGroup: "", kind: "Pod", type: "compute" },
  datavolumes: { apiGroup: "cdi.kubevirt.io", kind: "DataVolume", type: "storage" },
  persistentvolumeclaims: { apiGroup: "", kind: "PersistentVolumeClaim", type: "storage" },
  configmaps: { apiGroup: "", kind: "ConfigMap", type: "config" },
  secrets: { apiGroup: "", kind: "Secret", type: "config" },
  controllerrevisions: { apiGroup: "apps", kind: "ControllerRevision", type: "config" },
  virtualmachineinstancetypes: {
    apiGroup: "instancetype.kubevirt.io",
    kind: InstancetypeKind.Instancetype,
    type: "config",
  },
  virtualmachineclusterinstancetypes: {
    apiGroup: "instancetype.kubevirt.io",
    kind: InstancetypeKind.ClusterInstancetype,
    type: "config",
  },
  virtualmachinepreferences: {
    apiGroup: "instancetype.kubevirt.io",
    kind: InstancetypeKind.Preference,
    type: "config",
  },
  virtualmachineclusterpreferences: {
    apiGroup: "instancetype.kubevirt.io",
    kind: InstancetypeKind.ClusterPreference,
    type: "config",
  },
} as const satisfies Record<string, { apiGroup: string; kind: string; type: DependencyType }>;
type NodeResource = keyof typeof NODE_KINDS;

function node(
  resource: NodeResource,
  name: string,
  namespace: string,
  children: ObjectGraphNode[] = [],
  optional = false,
): ObjectGraphNode {
  const { apiGroup, kind, type } = NODE_KINDS[resource];
  return {
    objectReference: { apiGroup, kind, name, namespace },
    labels: { [DEPENDENCY_TYPE_LABEL]: type },
    ...(optional ? { optional: true } : {}),
    ...(children.length > 0 ? { children } : {}),
  };
}

/** The claims, DataVolumes, ConfigMaps and Secrets of the volumes, and the backend-storage claim when there is one. */
function volumeNodes(spec: VmiSpec, vmiName: string, namespace: string): ObjectGraphNode[] {
  const nodes = (spec.volumes ?? []).flatMap((volume): ObjectGraphNode[] => {
    if (volume.dataVolume)
      return [
        node("datavolumes", volume.dataVolume.name, namespace, [
          node("persistentvolumeclaims", volume.dataVolume.name, namespace),
        ]),
      ];
    if (volume.persistentVolumeClaim)
      return [node("persistentvolumeclaims", volume.persistentVolumeClaim.claimName, namespace)];
    if (volume.configMap) return [node("configmaps", volume.configMap.name, namespace)];
    if (volume.secret) return [node("secrets", volume.secret.secretName, namespace)];
    const cloudInit = volume.cloudInitNoCloud ?? volume.cloudInitConfigDrive;
    if (cloudInit)
      return [cloudInit.secretRef, cloudInit.networkDataSecretRef].flatMap((ref) =>
        ref ? [node("secrets", ref.name, namespace)] : [],
      );
    return [];
  });
  if (needsBackendStorage(spec))
    nodes.push(
      node("persistentvolumeclaims", backendStorageClaimName({ metadata: { name: vmiName } } as never), namespace),
    );
  return nodes;
}

function accessCredentialNodes(spec: VmiSpec, namespace: string): ObjectGraphNode[] {
  return (spec.accessCredentials ?? []).flatMap((credential) => {
    const secret = credential.sshPublicKey?.source.secret ?? credential.userPassword?.source.secret;
    return secret ? [node("secrets", secret.secretName, namespace)] : [];
  });
}

/**
 * An instancetype or preference (optional: a cluster may hold it under another name) and the ControllerRevision that
 * holds the copy the VM runs with, from its status or, before the status says, its spec's revisionName.
 */
function matcherNodes(
  matcher: { kind?: string; name: string; revisionName?: string } | undefined,
  statusRef: InstancetypeStatusRef | undefined,
  defaultKind: InstancetypeKind,
  namespace: string,
): ObjectGraphNode[] {
  if (!matcher) return [];
  const resource = `${(matcher.kind ?? defaultKind).toLowerCase()}s`;
  const nodes: ObjectGraphNode[] = [];
  if (resource === "virtualmachineclusterinstancetypes" || resource === "virtualmachineclusterpreferences")
    nodes.push(node(resource, matcher.name, "", [], true));
  else if (resource === "virtualmachineinstancetypes" || resource === "virtualmachinepreferences")
    nodes.push(node(resource, matcher.name, namespace, [], true));
  const revision = statusRef ? statusRef.controllerRevisionRef?.name : matcher.revisionName;
  if (revision) nodes.push(node("controllerrevisions", revision, namespace));
  return nodes;
}

/** What the graph is built from: the VM or the VMI, and the name of the VMI's launcher pod when it has one. */
export type GraphSource =
  { vm: VirtualMachine; launcherPod?: string } | { vmi: VirtualMachineInstance; launcherPod?: string };

/** The graph of a VM or VMI, before options filter it; pure. */
export function buildObjectGraph(source: GraphSource): ObjectGraphNode {
  const pod = (namespace: string) =>
    source.launcherPod !== undefined ? [node("pods", source.launcherPod, namespace)] : [];
  if ("vmi" in source) {
    const { vmi } = source;
    const name = vmi.metadata.name ?? "";
    const namespace = vmi.metadata.namespace ?? "";
    return node("virtualmachineinstances", name, namespace, [
      ...pod(namespace),
      ...accessCredentialNodes(vmi.spec, namespace),
      ...volumeNodes(vmi.spec, name, namespace),
    ]);
  }
  const { vm } = source;
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const template = vm.spec.template.spec;
  return node("virtualmachines", name, namespace, [
    ...(vm.status?.created === true ? [node("virtualmachineinstances", name, namespace, pod(namespace))] : []),
    ...matcherNodes(vm.spec.instancetype, vm.status?.instancetypeRef, InstancetypeKind.ClusterInstancetype, namespace),
    ...matcherNodes(vm.spec.preference, vm.status?.preferenceRef, InstancetypeKind.ClusterPreference, namespace),
    ...accessCredentialNodes(template, namespace),
    ...volumeNodes(template, name, namespace),
  ]);
}

function selects(selector: NonNullable<ObjectGraphOptions["labelSelector"]>, labels: Record<string, string>): boolean {
  const labelled = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  return (
    labelled &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      const value = labels[key];
      if (operator === "Exists") return value !== undefined;
      if (operator === "DoesNotExist") return value === undefined;
      if (operator === "In") return value !== undefined && values.includes(value);
      return value === undefined || !values.includes(value);
    })
  );
}

/** The root's descendants that the options keep, as KubeVirt filters them: a node left out takes its children along. */
export function filterObjectGraph(root: ObjectGraphNode, options: ObjectGraphOptions): ObjectGraphNode {
  const kept = (n: ObjectGraphNode) =>
    !(n.optional === true && options.includeOptionalNodes === false) &&
    (!options.labelSelector || selects(options.labelSelector, n.labels));
  const withChildren = (n: ObjectGraphNode): ObjectGraphNode => {
    const children = (n.children ?? []).filter(kept).map(withChildren);
    const copy: ObjectGraphNode = { objectReference: n.objectReference, labels: n.labels };
    if (n.optional !== undefined) copy.optional = n.optional;
    if (children.length > 0) copy.children = children;
    return copy;
  };
  return withChildren(root);
}

const OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"];
const isStringMap = (value: unknown): value is Record<string, string> =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  Object.values(value).every((v) => typeof v === "string");

/** KubeVirt's ObjectGraphOptions from a request body (empty: the defaults), or a 400 that names the field. */
export function parseObjectGraphOptions(text: string): ObjectGraphOptions {
  if (text.trim() === "") return {};
  const body = parseRequestJson(text);
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new ActionRefusal(400, 'the body must be an ObjectGraphOptions object, e.g. {"includeOptionalNodes": false}');
  const { includeOptionalNodes, labelSelector } = body as Record<string, unknown>;
  if (includeOptionalNodes !== undefined && includeOptionalNodes !== null && typeof includeOptionalNodes !== "boolean")
    throw new ActionRefusal(400, "includeOptionalNodes must be true or false");
  const options: ObjectGraphOptions = typeof includeOptionalNodes === "boolean" ? { includeOptionalNodes } : {};
  if (labelSelector === undefined || labelSelector === null) return options;
  const bad = (why: string) => new ActionRefusal(400, `labelSelector: ${why}`);
  if (typeof labelSelector !== "object" || Array.isArray(labelSelector))
    throw bad("must be a label selector, with matchLabels and/or matchExpressions");
  const { matchLabels, matchExpressions } = labelSelector as Record<string, unknown>;
  if (matchLabels !== undefined && matchLabels !== null && !isStringMap(matchLabels))
    throw bad('matchLabels must map label names to values, e.g. {"kubevirt.io/dependency-type": "storage"}');
  if (matchExpressions !== undefined && matchExpressions !== null) {
    if (!Array.isArray(matchExpressions)) throw bad("matchExpressions must be a list");
    matchExpressions.forEach((e: unknown, i) => {
      const { key, operator, values } = (e ?? {}) as Record<string, unknown>;
      const where = `matchExpressions[${String(i)}]`;
      if (typeof key !== "string" || key === "") throw bad(`${where}.key must name a label`);
      if (typeof operator !== "string" || !OPERATORS.includes(operator))
        throw bad(`${where}.operator must be one of ${OPERATORS.join(", ")}`);
      const hasValues = Array.isArray(values) && values.length > 0;
      if (
        values !== undefined &&
        values !== null &&
        !(Array.isArray(values) && values.every((v) => typeof v === "string"))
      )
        throw bad(`${where}.values must be a list of strings`);
      if ((operator === "In" || operator === "NotIn") !== hasValues)
        throw bad(`${where}.values must be set for In and NotIn, and only for them`);
    });
  }
  return {
    ...options,
    labelSelector: {
      ...(isStringMap(matchLabels) ? { matchLabels } : {}),
      ...(Array.isArray(matchExpressions) ? { matchExpressions: matchExpressions as LabelSelectorRequirement[] } : {}),
    },
  };
}

/** The most pods read for one VMI: its launcher pod, and a migration's target pod. */
const MAX_LAUNCHER_PODS = 10;

/**
 * The name of the VMI's launcher pod: a pod labelled for it that the VMI controls (isLauncherPodOf, so a pod planted
 * with its labels or its name is not taken), the one on the VMI's node when a migration has two.
 */
async function launcherPodName(own: KubeClient, vmi: VirtualMachineInstance): Promise<string | undefined> {
  const uid = vmi.metadata.uid;
  if (!uid) return undefined;
  const pods = await own.list<Pod>(resources.pods, vmi.metadata.namespace ?? "", {
    labelSelector: `${Label.App}=${LabelValue.Launcher},${Label.CreatedBy}=${uid}`,
    limit: MAX_LAUNCHER_PODS,
  });
  const launchers = pods.items.filter((pod) => isLauncherPodOf(pod, vmi));
  return (launchers.find((pod) => pod.spec?.nodeName === vmi.status?.nodeName) ?? launchers[0])?.metadata.name;
}

const objectGraphCheck = (resource: "virtualmachines" | "virtualmachineinstances"): Check => ({
  verb: "get",
  group: SUBRESOURCE_GROUP,
  resource,
  subresource: OBJECT_GRAPH_SUBRESOURCE,
});

/** GET <resource>/<name>/objectgraph, with KubeVirt's ObjectGraphOptions in the body (bounded). */
export async function requestObjectGraph(
  own: KubeClient,
  requester: Requester,
  target: { namespace: string; resource: "virtualmachines" | "virtualmachineinstances"; name: string },
  req: IncomingMessage,
): Promise<ObjectGraphNode> {
  const { namespace, resource, name } = target;
  await authorize(requester, { namespace, name }, objectGraphCheck(resource));
  const body = await readBody(req, limits.subresourceBodyBytes);
  if (body === undefined)
    throw new ActionRefusal(413, `a request body is at most ${String(limits.subresourceBodyBytes)} bytes`);
  const options = parseObjectGraphOptions(body.toString("utf8"));
  const notFound = (kind: "virtualmachine" | "virtualmachineinstance") =>
    new ActionRefusal(404, `${kind}.kubevirt.io "${name}" not found`, { name, kind });
  if (resource === "virtualmachines") {
    const vm = await own.find<VirtualMachine>(kubevirtResources.virtualMachines, namespace, name);
    if (!vm) throw notFound("virtualmachine");
    const vmi =
      vm.status?.created === true
        ? await own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, name)
        : undefined;
    const launcherPod = vmi ? await launcherPodName(own, vmi) : undefined;
    return filterObjectGraph(buildObjectGraph({ vm, launcherPod }), options);
  }
  const vmi = await own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, name);
  if (!vmi) throw notFound("virtualmachineinstance");
  return filterObjectGraph(buildObjectGraph({ vmi, launcherPod: await launcherPodName(own, vmi) }), options);
}
