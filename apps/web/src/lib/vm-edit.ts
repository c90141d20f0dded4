// The edit form's VM: what a person may change of a VM that exists (its size,
// guest OS, run strategy, disk buses, network card models, labels,
// annotations, node selector and tolerations), read from the VM and written
// back onto it. Everything the form does not show is kept as it is.

import { DISK_BUSES, INTERFACE_MODELS, InstancetypeKind, type VirtualMachine } from "@kubevirt-ts/kubevirt-api";
import type { PendingChange } from "@kubevirt-ts/vm-rules";
import { type FormProblem, groupCauses } from "./vm-form";

export { DISK_BUSES, INTERFACE_MODELS };

/** How a disk is attached: as a disk, a CD-ROM or a LUN, each with its bus. */
export type DiskKind = "disk" | "cdrom" | "lun";

export interface VmEditForm {
  /** A cluster instancetype's name, or "" for the CPU and memory given here. */
  size: string;
  /** A cluster preference's name, or "" for none. */
  preference: string;
  cpu: string;
  memory: string;
  runStrategy: string;
  disks: { name: string; kind: DiskKind; bus: string }[];
  /** Each interface's binding (shown, not changed) and card model ("" for virtio, the default). */
  interfaces: { name: string; binding: string; model: string }[];
  /** key=value, one per line. */
  labels: string;
  annotations: string;
  nodeSelector: string;
  /** As kubectl taint writes a taint: key=value:Effect, key:Effect, key, or * for every taint; one per line. */
  tolerations: string;
}

export type EditField = keyof VmEditForm;

/** The annotation kubectl apply keeps: large, and not for editing by hand; kept as it is, not shown. */
const HIDDEN_ANNOTATIONS = ["kubectl.kubernetes.io/last-applied-configuration"];

type Toleration = NonNullable<VirtualMachine["spec"]["template"]["spec"]["tolerations"]>[number];
type Disk = NonNullable<VirtualMachine["spec"]["template"]["spec"]["domain"]["devices"]["disks"]>[number];

const lines = (map: Record<string, string> | undefined, hidden: string[] = []) =>
  Object.entries(map ?? {})
    .filter(([k]) => !hidden.includes(k))
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");

function diskKind(disk: Disk): DiskKind {
  if (disk.cdrom) return "cdrom";
  if (disk.lun) return "lun";
  return "disk";
}

export function formatToleration(t: Toleration): string {
  const key = t.key ?? "";
  const head = key === "" && t.operator === "Exists" ? "*" : t.operator === "Exists" ? key : `${key}=${t.value ?? ""}`;
  return t.effect ? `${head}:${t.effect}` : head;
}

/** The form as the VM is now. */
export function editFormOf(vm: VirtualMachine): VmEditForm {
  const spec = vm.spec.template.spec;
  const domain = spec.domain;
  return {
    size: vm.spec.instancetype?.name ?? "",
    preference: vm.spec.preference?.name ?? "",
    cpu: String(domain.cpu?.cores ?? 1),
    memory: String(domain.memory?.guest ?? domain.resources?.requests?.memory ?? ""),
    runStrategy: vm.spec.runStrategy ?? (vm.spec.running ? "Always" : "Halted"),
    disks: (domain.devices.disks ?? []).map((d) => {
      const kind = diskKind(d);
      return { name: d.name, kind, bus: d[kind]?.bus ?? "" };
    }),
    interfaces: (domain.devices.interfaces ?? []).map((i) => ({
      name: i.name,
      binding: (["masquerade", "bridge", "sriov", "binding"] as const).find((b) => i[b as keyof typeof i]) ?? "",
      model: i.model ?? "",
    })),
    labels: lines(vm.metadata.labels),
    annotations: lines(vm.metadata.annotations, HIDDEN_ANNOTATIONS),
    nodeSelector: lines(spec.nodeSelector),
    tolerations: (spec.tolerations ?? []).map(formatToleration).join("\n"),
  };
}

/** The most lines a map or list field takes: a form is typed by a person. */
const MAX_LINES = 100;

// A qualified name, as Kubernetes checks label and annotation keys: an optional DNS prefix and a name of at most 63.
const KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

/**
 * The non-empty lines of a field, trimmed, each with its line's name for messages ("Labels, line 2"); at most
 * MAX_LINES, with a problem when there were more.
 */
function numberedLines(text: string, what: string, problems: string[]): { line: string; at: string }[] {
  const all = text.split("\n");
  if (all.length > MAX_LINES) problems.push(`${what}: at most ${String(MAX_LINES)} lines`);
  return all
    .slice(0, MAX_LINES)
    .map((raw, i) => ({ line: raw.trim(), at: `${what}, line ${String(i + 1)}` }))
    .filter(({ line }) => line !== "");
}

/** key=value lines as a map, or the problems with them, each naming its line. */
function parseMap(
  text: string,
  what: string,
  labelValues: boolean,
): { map: Record<string, string>; problems: string[] } {
  const map: Record<string, string> = {};
  const problems: string[] = [];
  for (const { line, at } of numberedLines(text, what, problems)) {
    const eq = line.indexOf("=");
    if (eq < 0) {
      problems.push(`${at}: write key=value`);
      continue;
    }
    const key = line.slice(0, eq).trim();
    const value = labelValues ? line.slice(eq + 1).trim() : line.slice(eq + 1);
    if (!KEY.test(key))
      problems.push(`${at}: "${key}" is not a valid key (letters, digits, '-', '_', '.', an optional prefix/)`);
    else if (key in map) problems.push(`${at}: "${key}" is given twice`);
    else if (labelValues && !LABEL_VALUE.test(value))
      problems.push(`${at}: the value of "${key}" must be at most 63 letters, digits, '-', '_' or '.'`);
    else map[key] = value;
  }
  return { map, problems };
}

/**
 * A change to the labels of several VMs at once: labels to set (key=value lines) and keys to remove (one per line),
 * or the problems with them.
 */
export function parseLabelChange(
  set: string,
  remove: string,
): { set: Record<string, string>; remove: string[]; problems: string[] } {
  const parsed = parseMap(set, "Labels to set", true);
  const keys = remove
    .split("\n")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  const problems = [...parsed.problems];
  if (keys.length > MAX_LINES) problems.push(`Labels to remove: at most ${String(MAX_LINES)} lines`);
  for (const key of keys.slice(0, MAX_LINES))
    if (!KEY.test(key)) problems.push(`Labels to remove: "${key}" is not a valid key`);
    else if (key in parsed.map) problems.push(`"${key}" is both set and removed`);
  return { set: parsed.map, remove: keys.slice(0, MAX_LINES), problems };
}

/**
 * The VM to send as an update: without its managedFields, which only say which writer set what (an update without
 * them leaves them as they are).
 */
export function forUpdate(vm: VirtualMachine): VirtualMachine {
  const metadata = { ...vm.metadata };
  delete metadata.managedFields;
  return { ...vm, metadata };
}

/** The labels with a change applied. */
export function changeLabels(
  labels: Record<string, string> | undefined,
  change: { set: Record<string, string>; remove: string[] },
): Record<string, string> {
  const next = { ...labels, ...change.set };
  for (const key of change.remove) Reflect.deleteProperty(next, key);
  return next;
}

/** Toleration lines, each as kubectl taint writes a taint; an unchanged one keeps its tolerationSeconds. */
function parseTolerations(text: string, before: Toleration[]): { tolerations: Toleration[]; problems: string[] } {
  const tolerations: Toleration[] = [];
  const problems: string[] = [];
  for (const { line, at } of numberedLines(text, "Tolerations", problems)) {
    const colon = line.lastIndexOf(":");
    const head = colon < 0 ? line : line.slice(0, colon);
    const effect = colon < 0 ? undefined : line.slice(colon + 1);
    if (effect !== undefined && !(EFFECTS as readonly string[]).includes(effect)) {
      problems.push(`${at}: the effect must be one of ${EFFECTS.join(", ")}`);
      continue;
    }
    const eq = head.indexOf("=");
    const key = eq < 0 ? head : head.slice(0, eq);
    const t: Toleration =
      head === "*"
        ? { operator: "Exists" }
        : eq < 0
          ? { key, operator: "Exists" }
          : { key, operator: "Equal", value: head.slice(eq + 1) };
    if (head !== "*" && !KEY.test(key)) {
      problems.push(`${at}: "${key}" is not a valid taint key; write key=value:Effect, key:Effect, key or *`);
      continue;
    }
    if (effect) t.effect = effect as Toleration["effect"];
    const same = before.find((b) => formatToleration(b) === formatToleration(t));
    tolerations.push(same ?? t);
  }
  return { tolerations, problems };
}

/** Sets `key` of `object` to `value`, or removes it when the value is empty. */
function setOrRemove<T extends object, K extends keyof T>(object: T, key: K, value: T[K] | undefined, empty: boolean) {
  // Removed through Reflect: the key is one of T's own, named by the caller.
  if (empty || value === undefined) Reflect.deleteProperty(object, key);
  else object[key] = value;
}

/**
 * The VM with the form's values, or the problems with the form by field. The rest of the VM (its volumes, its status,
 * its resourceVersion, which makes a concurrent change a conflict rather than lost) is kept.
 */
export function applyEdit(
  vm: VirtualMachine,
  form: VmEditForm,
): { vm: VirtualMachine; problems: Partial<Record<EditField, string[]>> } {
  const next = structuredClone(forUpdate(vm));
  const problems: Partial<Record<EditField, string[]>> = {};
  const note = (field: EditField, list: string[]) => {
    if (list.length > 0) (problems[field] ??= []).push(...list);
  };
  const labels = parseMap(form.labels, "Labels", true);
  const annotations = parseMap(form.annotations, "Annotations", false);
  const nodeSelector = parseMap(form.nodeSelector, "Node selector", true);
  const tolerations = parseTolerations(form.tolerations, vm.spec.template.spec.tolerations ?? []);
  note("labels", labels.problems);
  note("annotations", annotations.problems);
  note("nodeSelector", nodeSelector.problems);
  note("tolerations", tolerations.problems);

  // Only what the form changed is written: a field left as it was stays exactly as stored (a running VM whose labels
  // alone change needs no restart, a VM sized by default CPU gets no explicit one).
  const was = editFormOf(vm);
  const changed = (field: Exclude<EditField, "disks" | "interfaces">) => form[field] !== was[field];
  if (changed("labels")) setOrRemove(next.metadata, "labels", labels.map, Object.keys(labels.map).length === 0);
  if (changed("annotations")) {
    const kept = Object.fromEntries(
      Object.entries(vm.metadata.annotations ?? {}).filter(([k]) => HIDDEN_ANNOTATIONS.includes(k)),
    );
    const all = { ...annotations.map, ...kept };
    setOrRemove(next.metadata, "annotations", all, Object.keys(all).length === 0);
  }

  if (changed("runStrategy")) {
    // A run strategy replaces the older running field: KubeVirt refuses both.
    next.spec.runStrategy = form.runStrategy as VirtualMachine["spec"]["runStrategy"];
    delete next.spec.running;
  }

  const domain = next.spec.template.spec.domain;
  if (changed("size") && form.size) {
    // The instancetype sizes the VM: the template's CPU and memory would conflict with it.
    next.spec.instancetype = { name: form.size, kind: InstancetypeKind.ClusterInstancetype };
    delete domain.cpu;
    delete domain.memory;
  } else if (!form.size) {
    if (changed("size")) delete next.spec.instancetype;
    const cores = Number(form.cpu);
    if (changed("cpu") || changed("size"))
      domain.cpu = { ...domain.cpu, cores: (Number.isInteger(cores) ? cores : form.cpu) as number };
    if (changed("memory") || changed("size")) domain.memory = { ...domain.memory, guest: form.memory.trim() };
  }
  if (changed("preference")) {
    if (form.preference) next.spec.preference = { name: form.preference, kind: InstancetypeKind.ClusterPreference };
    else delete next.spec.preference;
  }

  form.disks.forEach((d, i) => {
    if (d.bus === was.disks[i]?.bus) return;
    const target = domain.devices.disks?.find((x) => x.name === d.name)?.[d.kind];
    if (target) setOrRemove(target, "bus", d.bus as NonNullable<typeof target>["bus"], d.bus === "");
  });
  form.interfaces.forEach((f, i) => {
    if (f.model === was.interfaces[i]?.model) return;
    const iface = domain.devices.interfaces?.find((x) => x.name === f.name);
    if (iface) setOrRemove(iface, "model", f.model as NonNullable<typeof iface>["model"], f.model === "");
  });
  const spec = next.spec.template.spec;
  if (changed("nodeSelector"))
    setOrRemove(spec, "nodeSelector", nodeSelector.map, Object.keys(nodeSelector.map).length === 0);
  if (changed("tolerations"))
    setOrRemove(spec, "tolerations", tolerations.tolerations, tolerations.tolerations.length === 0);
  return { vm: next, problems };
}

const FIELD_OF: [RegExp, EditField][] = [
  [/^metadata\.labels/, "labels"],
  [/^metadata\.annotations/, "annotations"],
  [/^spec\.instancetype/, "size"],
  [/^spec\.preference/, "preference"],
  [/^spec\.template\.spec\.domain\.cpu/, "cpu"],
  [/^spec\.template\.spec\.domain\.memory|^spec\.template\.spec\.domain\.resources/, "memory"],
  [/^spec\.template\.spec\.domain\.devices\.disks/, "disks"],
  [/^spec\.template\.spec\.domain\.devices\.interfaces/, "interfaces"],
  [/^spec\.template\.spec\.nodeSelector/, "nodeSelector"],
  [/^spec\.template\.spec\.tolerations/, "tolerations"],
  [/^spec\.runStrategy|^spec\.running/, "runStrategy"],
];

const LABELS: Record<EditField, string> = {
  size: "The size",
  preference: "The guest OS",
  cpu: "CPU cores",
  memory: "Memory",
  runStrategy: "The run strategy",
  disks: "A disk",
  interfaces: "A network interface",
  labels: "A label",
  annotations: "An annotation",
  nodeSelector: "The node selector",
  tolerations: "A toleration",
};

/** The API's causes under the edit form's fields, in words. */
export function editCausesByField(
  causes: { field: string; message: string }[],
): Partial<Record<EditField | "", FormProblem[]>> {
  return groupCauses(causes, FIELD_OF, LABELS);
}

/** What the spec's fields are called, for the changes that wait for a restart. */
const FIELD_NAMES: [RegExp, string][] = [
  [/^spec\.template\.spec\.domain\.memory/, "Memory"],
  [/^spec\.template\.spec\.domain\.resources/, "Resources"],
  [/^spec\.template\.spec\.domain\.cpu/, "CPU"],
  [/^spec\.template\.spec\.domain\.devices\.disks/, "Disks"],
  [/^spec\.template\.spec\.domain\.devices\.interfaces/, "Network interfaces"],
  [/^spec\.template\.spec\.domain\.devices/, "Devices"],
  [/^spec\.template\.spec\.domain\.firmware/, "Firmware"],
  [/^spec\.template\.spec\.domain/, "The machine"],
  [/^spec\.template\.spec\.volumes/, "Volumes"],
  [/^spec\.template\.spec\.networks/, "Networks"],
  [/^spec\.template\.spec\.nodeSelector/, "Node selector"],
  [/^spec\.template\.spec\.tolerations/, "Tolerations"],
  [/^spec\.template\.spec\.affinity/, "Affinity"],
  [/^spec\.instancetype/, "Instancetype"],
  [/^spec\.preference/, "Preference"],
];

/** A change that waits for a restart, in words: what it concerns, and the field within the template. */
export function describeChange(change: PendingChange): { what: string; field: string } {
  const what = FIELD_NAMES.find(([pattern]) => pattern.test(change.path))?.[1] ?? "The template";
  return { what, field: change.path.replace(/^spec\.template\.spec\./, "") };
}
