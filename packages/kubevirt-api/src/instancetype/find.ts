import { API_VERSION, INSTANCETYPE_VERSION, InstancetypeKind, Kind } from "../constants.ts";
import { controllerRevisions, instancetypeResources } from "../resources.ts";
import {
  type InstancetypeSpec,
  type InstancetypeStatusRef,
  type PreferenceSpec,
  instancetypeSpec,
  preferenceSpec,
} from "../schema/instancetype.ts";
import type { VirtualMachine } from "../schema/vm.ts";
import type { ExpansionSources } from "./expand.ts";
import { controllerRef } from "../owner.ts";

// Finding a VM's instancetype and preference as KubeVirt does: the copy
// captured in a ControllerRevision when the VM names one (spec's
// revisionName, or status.instancetypeRef / preferenceRef), otherwise the
// object itself, namespaced or cluster-wide by the matcher's kind (any case,
// singular or plural, the cluster kind when empty). The caller supplies
// `lookup`, which answers undefined for a 404 alone and throws anything else.

export type Which = "instancetype" | "preference";

interface ResourceRef {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}
export type Lookup = (resource: ResourceRef, namespace: string | undefined, name: string) => Promise<unknown>;

interface StoredObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; uid?: string; generation?: number; [key: string]: unknown };
  spec?: unknown;
}

const KINDS: Record<Which, { namespaced: InstancetypeKind; cluster: InstancetypeKind }> = {
  instancetype: { namespaced: InstancetypeKind.Instancetype, cluster: InstancetypeKind.ClusterInstancetype },
  preference: { namespaced: InstancetypeKind.Preference, cluster: InstancetypeKind.ClusterPreference },
};

/** The kind a matcher's `kind` names, or undefined for one KubeVirt does not accept there. */
export function matcherKind(which: Which, kind: string | undefined): InstancetypeKind | undefined {
  const { namespaced, cluster } = KINDS[which];
  const lower = (kind ?? "").toLowerCase();
  if (lower === "") return cluster;
  for (const candidate of [namespaced, cluster]) {
    const singular = candidate.toLowerCase();
    if (lower === singular || lower === `${singular}s`) return candidate;
  }
  return undefined;
}

export const REVISION_LABEL = {
  generation: "instancetype.kubevirt.io/object-generation",
  kind: "instancetype.kubevirt.io/object-kind",
  name: "instancetype.kubevirt.io/object-name",
  uid: "instancetype.kubevirt.io/object-uid",
  version: "instancetype.kubevirt.io/object-version",
} as const;

/** KubeVirt's name for the revision that captures `object` for the VM `vmName`. */
export function revisionName(vmName: string, object: StoredObject): string {
  return (
    `${vmName}-${object.metadata.name ?? ""}-${INSTANCETYPE_VERSION}-` +
    `${object.metadata.uid ?? ""}-${String(object.metadata.generation ?? 0)}`
  );
}

/** The ControllerRevision that keeps the VM's copy of `object` (without its metadata but its name), owned by the VM. */
export function controllerRevisionFor(vm: VirtualMachine, object: StoredObject): Record<string, unknown> {
  const { name, uid, generation } = object.metadata;
  return {
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: revisionName(vm.metadata.name ?? "", object),
      namespace: vm.metadata.namespace,
      labels: {
        [REVISION_LABEL.generation]: String(generation ?? 0),
        [REVISION_LABEL.kind]: object.kind ?? "",
        [REVISION_LABEL.name]: name ?? "",
        [REVISION_LABEL.uid]: uid ?? "",
        [REVISION_LABEL.version]: INSTANCETYPE_VERSION,
      },
      ownerReferences: [controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachine, metadata: vm.metadata })],
    },
    data: { apiVersion: object.apiVersion, kind: object.kind, metadata: { name, uid, generation }, spec: object.spec },
    revision: 0,
  };
}

export interface Found<S> {
  name: string;
  kind: InstancetypeKind;
  spec: S;
  /** The ControllerRevision it came from, or the live object to capture in one. */
  revision: { name: string } | { object: StoredObject };
}

export interface Problem {
  which: Which;
  /** KubeVirt's reason on the VM's Failure condition. */
  reason: "FailedFindInstancetype" | "FailedFindPreference" | "InvalidInstancetype" | "InvalidPreference";
  field: string;
  message: string;
  /** Whether it is the VM's own mistake, refused at admission, rather than something that may yet appear. */
  refused?: boolean;
}

export interface FindResult {
  instancetype?: Found<InstancetypeSpec>;
  preference?: Found<PreferenceSpec>;
  problems: Problem[];
}

/** The expansion's inputs from what was found. */
export function expansionSources(found: FindResult): ExpansionSources {
  return {
    instancetype: found.instancetype && { name: found.instancetype.name, spec: found.instancetype.spec },
    preference: found.preference && { name: found.preference.name, spec: found.preference.spec },
  };
}

/** The status reference that says which object, captured in which revision, the VM runs with. */
export function statusRef(found: Found<unknown> | undefined, vmName: string): InstancetypeStatusRef | undefined {
  if (!found) return undefined;
  const revision = "name" in found.revision ? found.revision.name : revisionName(vmName, found.revision.object);
  return { name: found.name, kind: found.kind, controllerRevisionRef: { name: revision } };
}

async function findOne<S>(
  vm: VirtualMachine,
  which: Which,
  lookup: Lookup,
  problems: Problem[],
): Promise<Found<S> | undefined> {
  const matcher = vm.spec[which];
  if (!matcher) return undefined;
  const schema = which === "instancetype" ? instancetypeSpec : preferenceSpec;
  const failed = which === "instancetype" ? "FailedFindInstancetype" : "FailedFindPreference";
  const invalid = which === "instancetype" ? "InvalidInstancetype" : "InvalidPreference";
  const kind = matcherKind(which, matcher.kind);
  if (!kind) {
    const { namespaced, cluster } = KINDS[which];
    problems.push({
      which,
      reason: failed,
      field: `spec.${which}.kind`,
      message:
        `spec.${which}.kind: got unexpected kind ${JSON.stringify(matcher.kind)}; ` +
        `use ${cluster} (the default) or ${namespaced}`,
      refused: true,
    });
    return undefined;
  }
  const namespace = vm.metadata.namespace;
  const ref = vm.status?.[which === "instancetype" ? "instancetypeRef" : "preferenceRef"];
  const captured =
    matcher.revisionName ??
    (ref?.name === matcher.name && matcherKind(which, ref.kind) === kind ? ref.controllerRevisionRef?.name : undefined);
  let stored: StoredObject | undefined;
  let revision: Found<S>["revision"];
  if (captured !== undefined) {
    const found = (await lookup(controllerRevisions, namespace, captured)) as { data?: StoredObject } | undefined;
    if (!found?.data) {
      problems.push({
        which,
        reason: failed,
        field: `spec.${which}.revisionName`,
        message:
          `the ControllerRevision ${captured} that holds the VM's ${which} ${matcher.name} is not found ` +
          `in ${namespace ?? ""}: remove the revision name to capture the ${which} again`,
      });
      return undefined;
    }
    stored = found.data;
    revision = { name: captured };
  } else {
    const resource = instancetypeResources[kind];
    stored = (await lookup(resource, resource.namespaced ? namespace : undefined, matcher.name)) as
      StoredObject | undefined;
    if (!stored) {
      const where = resource.namespaced ? ` in namespace ${namespace ?? ""}` : "";
      problems.push({
        which,
        reason: failed,
        field: `spec.${which}.name`,
        message:
          `${resource.plural}.${resource.group} ${JSON.stringify(matcher.name)} not found${where}: ` +
          `create it, or name one that exists (kubectl get ${resource.plural})`,
      });
      return undefined;
    }
    revision = { object: stored };
  }
  const parsed = schema.safeParse(stored.spec);
  if (!parsed.success) {
    const paths = parsed.error.issues.map((i) => i.path.join(".")).join(", ");
    problems.push({
      which,
      reason: invalid,
      field: `spec.${which}.name`,
      message:
        `the ${which} ${matcher.name} has fields kubevirt-ts cannot give their ` +
        `effect (${paths}): use one without them`,
    });
    return undefined;
  }
  return { name: matcher.name, kind, spec: parsed.data as S, revision };
}

/**
 * The VM's instancetype and preference, each from its captured revision when it has one, and what could not be found.
 */
export async function findInstancetypeAndPreference(vm: VirtualMachine, lookup: Lookup): Promise<FindResult> {
  const problems: Problem[] = [];
  const [instancetype, preference] = await Promise.all([
    findOne<InstancetypeSpec>(vm, "instancetype", lookup, problems),
    findOne<PreferenceSpec>(vm, "preference", lookup, problems),
  ]);
  return { ...(instancetype ? { instancetype } : {}), ...(preference ? { preference } : {}), problems };
}
