import {
  API_VERSION,
  Annotation,
  Kind,
  Label,
  type VirtualMachine,
  type VirtualMachineInstance,
  controllerRef,
  controllerRevisions,
} from "@kubevirt-ts/kubevirt-api";

// The VM as its VMI was started from, as KubeVirt keeps it: a ControllerRevision
// revision-start-vm-<VM uid>-<generation> holding the VM's spec, owned by the
// VM, one per VM (the one of the last start), and the generation on the VMI
// (kubevirt.io/vm-generation). A running VM whose template has changed since
// needs a restart for the change to take effect: kubevirt-ts stages every
// change (vmRolloutStrategy Stage, no hotplug), so any change to the template,
// or to the instancetype or preference it names, sets RestartRequired.

/** KubeVirt's message on the RestartRequired condition, word for word. */
export const RESTART_REQUIRED_MESSAGE = "a non-live-updatable field was changed in the template spec";

/** A start revision: the VM's spec as of a start, and the generation it had. */
export interface StartRevision {
  apiVersion?: string;
  kind?: string;
  metadata: VirtualMachine["metadata"];
  data?: { spec?: VirtualMachine["spec"] };
  revision?: number;
}

/** What the names of the VM's start revisions begin with. */
export function startRevisionPrefix(vmUid: string): string {
  return `revision-start-vm-${vmUid}-`;
}

/** KubeVirt's name of the revision that holds the VM's spec as of its start at `generation`. */
export function startRevisionName(vmUid: string, generation: number): string {
  return `${startRevisionPrefix(vmUid)}${String(generation)}`;
}

/** The ControllerRevision of the VM as it is now, for the VMI about to be made from it. */
export function startRevisionFor(vm: VirtualMachine): StartRevision {
  const generation = vm.metadata.generation ?? 0;
  return {
    apiVersion: `${controllerRevisions.group}/${controllerRevisions.version}`,
    kind: "ControllerRevision",
    metadata: {
      name: startRevisionName(vm.metadata.uid ?? "", generation),
      namespace: vm.metadata.namespace,
      // The VM's uid, not its name: a label's value holds 63 characters, a VM's name up to 253.
      labels: { [Label.CreatedBy]: vm.metadata.uid ?? "" },
      ownerReferences: [controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachine, metadata: vm.metadata })],
    },
    data: { spec: vm.spec },
    revision: generation,
  };
}

/** The start revision a VMI of the VM came from; undefined for a VMI made before kubevirt-ts kept them. */
export function startRevisionOf(vm: VirtualMachine, vmi: VirtualMachineInstance): string | undefined {
  const generation = Number(vmi.metadata.annotations?.[Annotation.VmGeneration]);
  if (!Number.isSafeInteger(generation) || generation < 0) return undefined;
  return startRevisionName(vm.metadata.uid ?? "", generation);
}

/** The parts of a VM's spec its VMI is made from: the template's spec, and the instancetype and preference named. */
function started(spec: VirtualMachine["spec"] | undefined): Record<string, unknown> {
  // A kind is matched without regard to case, as KubeVirt matches it.
  const ref = (r: { name?: string; kind?: string } | undefined) =>
    r === undefined ? undefined : { name: r.name, kind: r.kind?.toLowerCase() };
  // Through JSON: what is stored, without undefined members.
  return JSON.parse(
    JSON.stringify({
      "spec.template.spec": spec?.template.spec,
      "spec.instancetype": ref(spec?.instancetype),
      "spec.preference": ref(spec?.preference),
    }),
  ) as Record<string, unknown>;
}

/** One change to a running VM's spec that waits for a restart: the field, and its value then and now (JSON). */
export interface PendingChange {
  path: string;
  /** Absent when the field was not set at the start. */
  before?: string;
  /** Absent when the field has been removed since. */
  after?: string;
}

/** The most changes listed, and the longest value shown: a spec may be large, what a person reads should not be. */
export const MAX_PENDING_CHANGES = 20;
const MAX_VALUE_CHARS = 120;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function shown(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const text = JSON.stringify(value);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}

/**
 * The fields below `path` where `a` and `b` differ, members matched by name and list items by place; it stops once
 * `into` holds `limit`.
 */
function differences(a: unknown, b: unknown, path: string, into: PendingChange[], limit: number): void {
  if (into.length >= limit) return;
  if (isObject(a) && isObject(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort())
      differences(a[key], b[key], `${path}.${key}`, into, limit);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++)
      differences(a[i], b[i], `${path}[${String(i)}]`, into, limit);
    return;
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  const before = shown(a);
  const after = shown(b);
  into.push({ path, ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) });
}

/**
 * What differs between the spec a VM's VMI was started from and the VM's spec now, in the parts a VMI is made from
 * (the template's spec, the instancetype and preference named), field by field: the changes a restart would bring.
 * At most `limit` (MAX_PENDING_CHANGES unless given) are listed; none means no restart is needed.
 */
export function pendingChanges(
  startSpec: VirtualMachine["spec"] | undefined,
  vm: VirtualMachine,
  limit = MAX_PENDING_CHANGES,
): PendingChange[] {
  const then = started(startSpec);
  const now = started(vm.spec);
  const changes: PendingChange[] = [];
  for (const part of Object.keys(now)) differences(then[part], now[part], part, changes, limit);
  return changes;
}

/**
 * Whether the VM's template (or its instancetype or preference) differs from the spec its VMI was started from: the
 * controller asks at each sync of a running VM, so the walk ends at the first difference.
 */
export function templateChanged(startSpec: VirtualMachine["spec"] | undefined, vm: VirtualMachine): boolean {
  return pendingChanges(startSpec, vm, 1).length > 0;
}
