import { setCondition } from "@kubevirt-ts/kube";
import {
  CLONE_API_VERSION,
  CLONE_KIND,
  ClonePhase,
  type Condition,
  SnapshotConditionType,
  SnapshotKind,
  SNAPSHOT_API_VERSION,
  type VirtualMachineClone,
  type VirtualMachineCloneStatus,
  type VirtualMachineRestore,
  type VirtualMachineSnapshot,
  controllerRef,
} from "@kubevirt-ts/kubevirt-api";
import { LAST_RESTORE_ANNOTATION, MAX_PATCHES, type SnapshotVm, patchRefusal, restoredVm } from "../restore/decide.ts";

// What a VirtualMachineClone does, decided from what it observes alone (pure): the names of the snapshot, the restore
// and the new VM, the patches that carry the clone's filters, MACs and serial to the new VM, and the status. As
// KubeVirt's clone controller, a clone is a VirtualMachineSnapshot of its source VM (none for a snapshot source) and a
// VirtualMachineRestore of it to the new VM, both owned by the clone and deleted once the new VM is made. The
// controller (controller.ts) carries it out; docs/data-protection.md says what a clone does.

/** Five characters of the clone's UID: the new VM's generated name is the same on every pass. */
const suffixOf = (clone: VirtualMachineClone) => (clone.metadata.uid ?? "").replaceAll("-", "").slice(0, 5);

/** The snapshot a VM source is taken into, as KubeVirt (since v1.2) names it: tmp-snapshot-<clone uid>. */
export const cloneSnapshotName = (clone: VirtualMachineClone): string => `tmp-snapshot-${clone.metadata.uid ?? ""}`;

/** The restore that makes the new VM: tmp-restore-<clone uid>. */
export const cloneRestoreName = (clone: VirtualMachineClone): string => `tmp-restore-${clone.metadata.uid ?? ""}`;

/**
 * The new VM's name: spec.target.name, else KubeVirt's <vm>-clone-<suffix>, kept to 63 characters so that it fits the
 * label values that carry a VM's name.
 */
export function targetName(clone: VirtualMachineClone, vmName: string): string {
  if (clone.spec.target?.name) return clone.spec.target.name;
  const suffix = `-clone-${suffixOf(clone)}`;
  return `${vmName.slice(0, 63 - suffix.length).replace(/-+$/, "")}${suffix}`;
}

/** How long the snapshot of a clone's source may take. */
export const CLONE_SNAPSHOT_DEADLINE = "1h";

/** The snapshot of a VM source, owned by the clone. */
export function cloneSnapshot(clone: VirtualMachineClone): VirtualMachineSnapshot {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: SnapshotKind.VirtualMachineSnapshot,
    metadata: {
      name: cloneSnapshotName(clone),
      namespace: clone.metadata.namespace,
      ownerReferences: [cloneOwnerRef(clone)],
    },
    spec: {
      source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: clone.spec.source.name },
      // KubeVirt's 5 minutes assume a CSI snapshot, taken at once; here each disk is copied (ADR 27), which takes
      // longer for a large disk.
      failureDeadline: CLONE_SNAPSHOT_DEADLINE,
    },
  };
}

/** The restore of the snapshot to the new VM, with the clone's patches, owned by the clone. */
export function cloneRestore(
  clone: VirtualMachineClone,
  snapshotName: string,
  vmName: string,
  patches: string[],
): VirtualMachineRestore {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: SnapshotKind.VirtualMachineRestore,
    metadata: {
      name: cloneRestoreName(clone),
      namespace: clone.metadata.namespace,
      ownerReferences: [cloneOwnerRef(clone)],
    },
    spec: {
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: targetName(clone, vmName) },
      virtualMachineSnapshotName: snapshotName,
      ...(clone.spec.volumeNamePolicy ? { volumeRestorePolicy: clone.spec.volumeNamePolicy } : {}),
      patches,
    },
  };
}

export const cloneOwnerRef = (clone: VirtualMachineClone) =>
  controllerRef({ apiVersion: CLONE_API_VERSION, kind: CLONE_KIND, metadata: clone.metadata });

/**
 * Whether a label or annotation key matches a filter: "*" stands for any run of characters, everything else is
 * itself, and the filter may match anywhere in the key, as KubeVirt's unanchored regular expressions do. KubeVirt
 * reads filters as regular expressions; kubevirt-ts reads them as the wildcards its documentation describes, so that
 * a tenant's filter cannot make the controller backtrack (docs/adr/0028). Greedy matching with one fallback point:
 * at most key length times filter length steps.
 */
export function matchesFilter(filter: string, key: string): boolean {
  const pattern = `*${filter === ".*" ? "*" : filter}*`;
  let p = 0;
  let k = 0;
  let star = -1;
  let resume = 0;
  while (k < key.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === key[k]) {
      p++;
      k++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      resume = k;
    } else if (star >= 0) {
      p = star + 1;
      k = ++resume;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}

/**
 * The keys of a map that the filters keep, as KubeVirt keeps them: unset filters keep every key; otherwise a key is
 * kept when a plain filter matches it and no "!" filter does (an empty list keeps none).
 */
export function keptKeys(keys: readonly string[], filters: readonly string[] | undefined): Set<string> {
  if (filters === undefined) return new Set(keys);
  const plain = filters.filter((f) => !f.startsWith("!"));
  const negated = filters.filter((f) => f.startsWith("!")).map((f) => f.slice(1));
  return new Set(
    keys.filter((k) => plain.some((f) => matchesFilter(f, k)) && !negated.some((f) => matchesFilter(f, k))),
  );
}

/** A JSON pointer token (RFC 6901): ~ and / escaped. */
const token = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

const MAC = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/;

/**
 * The restore's patches for the clone, as KubeVirt generates them, then the clone's own spec.patches: a MAC for each
 * interface newMacAddresses names (the others get a new one from libvirt, as the restore drops the snapshot's), the
 * SMBIOS serial (the given one, or the source's dropped), and a removal for each label and annotation, of the VM and
 * of its template, that the filters do not keep (the restore's own annotation is always kept). A string is why the
 * clone cannot be made, naming the field.
 */
export function clonePatches(clone: VirtualMachineClone, vm: SnapshotVm): string[] | string {
  const { spec } = clone;
  const patches: object[] = [];
  const template = vm.spec.template;
  const interfaces = template.spec.domain.devices.interfaces ?? [];
  for (const [name, mac] of Object.entries(spec.newMacAddresses ?? {})) {
    const index = interfaces.findIndex((i) => i.name === name);
    if (index < 0)
      return (
        `spec.newMacAddresses.${name}: the VM has no interface ${name} ` +
        `(it has ${interfaces.map((i) => i.name).join(", ") || "none"}): name one of its interfaces`
      );
    if (mac === "") continue;
    if (!MAC.test(mac)) return `spec.newMacAddresses.${name}: ${mac} is not a MAC address such as 02:00:00:00:00:01`;
    patches.push({
      op: "add",
      path: `/spec/template/spec/domain/devices/interfaces/${String(index)}/macAddress`,
      value: mac,
    });
  }
  const firmware = template.spec.domain.firmware;
  if (spec.newSMBiosSerial !== undefined && spec.newSMBiosSerial !== "")
    patches.push(
      firmware
        ? { op: "add", path: "/spec/template/spec/domain/firmware/serial", value: spec.newSMBiosSerial }
        : { op: "add", path: "/spec/template/spec/domain/firmware", value: { serial: spec.newSMBiosSerial } },
    );
  else if (firmware?.serial !== undefined)
    patches.push({ op: "remove", path: "/spec/template/spec/domain/firmware/serial" });
  const removals = (map: Record<string, string> | undefined, filters: string[] | undefined, base: string) => {
    const keys = Object.keys(map ?? {}).filter((k) => k !== LAST_RESTORE_ANNOTATION);
    const kept = keptKeys(keys, filters);
    for (const key of keys) if (!kept.has(key)) patches.push({ op: "remove", path: `${base}/${token(key)}` });
  };
  removals(vm.metadata?.labels, spec.labelFilters, "/metadata/labels");
  removals(vm.metadata?.annotations, spec.annotationFilters, "/metadata/annotations");
  removals(template.metadata?.labels, spec.template?.labelFilters, "/spec/template/metadata/labels");
  removals(template.metadata?.annotations, spec.template?.annotationFilters, "/spec/template/metadata/annotations");

  for (const [i, text] of (spec.patches ?? []).entries()) {
    const refused = patchRefusal(text);
    if (refused !== undefined) return `spec.patches[${String(i)}]: ${refused}`;
  }
  const all = [...patches.map((p) => JSON.stringify(p)), ...(spec.patches ?? [])];
  if (all.length > MAX_PATCHES)
    return (
      `spec.patches: with the ${String(patches.length)} patches the clone makes of its filters, MACs and serial, ` +
      `its restore would have ${String(all.length)}, more than ${String(MAX_PATCHES)}: give fewer patches, or ` +
      "filters that keep more"
    );
  // The patches are tried here by the restore's own making of the new VM, so that a bad one fails the clone naming it.
  const tried = restoredVm(cloneRestore(clone, "", vm.metadata?.name ?? "", all), vm, undefined);
  if (typeof tried === "string") {
    const at = /^spec\.patches: patch (\d+): /.exec(tried);
    const index = at ? Number(at[1]) - patches.length : -1;
    return index >= 0 ? `spec.patches[${String(index)}]: ${tried.slice(at?.[0].length)}` : tried;
  }
  return all;
}

/** Sets the clone's phase and its Progressing and Ready conditions, as KubeVirt's: the reason is also the message. */
export function cloneStatus(
  status: VirtualMachineCloneStatus,
  phase: ClonePhase,
  reason: string,
  now: Date,
): VirtualMachineCloneStatus {
  const done = phase === ClonePhase.Succeeded;
  const failed = phase === ClonePhase.Failed;
  let conditions = status.conditions ?? [];
  for (const [type, value] of [
    [SnapshotConditionType.Progressing, !done && !failed],
    [SnapshotConditionType.Ready, done],
  ] as const)
    conditions = setCondition<Condition>(
      conditions,
      { type, status: value ? "True" : "False", reason, message: reason },
      now,
    );
  return { ...status, phase, conditions };
}
