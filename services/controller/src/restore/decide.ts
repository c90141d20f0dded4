import { setCondition } from "@kubevirt-ts/kube";
import {
  API_VERSION,
  CDI_API_VERSION,
  type Condition,
  type DataVolume,
  Kind,
  SNAPSHOT_API_VERSION,
  SnapshotConditionType,
  SnapshotKind,
  TargetReadinessPolicy,
  type VirtualMachine,
  type VirtualMachineRestore,
  type VirtualMachineRestoreStatus,
  type VirtualMachineSnapshotContent,
  type VolumeBackup,
  VolumeRestorePolicy,
  controllerRef,
  runStrategyOf,
  volumeCopyOf,
} from "@kubevirt-ts/kubevirt-api";

// What a VirtualMachineRestore does, decided from what it observes alone (pure, so KubeVirt's rules are tested
// without a cluster): the names of the restored claims, whether the target is ready, the target VM as the snapshot
// had it with its volumes on the restored claims, the DataVolumes that fill those claims from the snapshot's copies,
// and the status. The controller (controller.ts) carries it out, one step per pass.

/** KubeVirt's annotation on a restored VM (and claim): the restore that made it, `<name>-<uid>`. */
export const LAST_RESTORE_ANNOTATION = "restore.kubevirt.io/lastRestoreUID";
/** KubeVirt's annotation on what a restore made: the restore's name. */
export const RESTORE_NAME_ANNOTATION = "restore.kubevirt.io/name";
/** KubeVirt's labels on a restored claim: the VM the snapshot was of. */
export const RESTORE_SOURCE_NAME_LABEL = "restore.kubevirt.io/source-vm-name";
export const RESTORE_SOURCE_NAMESPACE_LABEL = "restore.kubevirt.io/source-vm-namespace";
/** KubeVirt's finalizer on a restore, so that a deleted restore still lets go of its target. */
export const RESTORE_FINALIZER = "snapshot.kubevirt.io/vmrestore-protection";
/** KubeVirt's grace period for a running target under WaitGracePeriod. */
export const TARGET_GRACE_PERIOD_MS = 5 * 60_000;
/** At most this many JSON patches in spec.patches, each at most this long: a tenant's bytes are bounded. */
export const MAX_PATCHES = 100;
export const MAX_PATCH_CHARS = 16 * 1024;
/** The patched VM, serialized, is at most this long: `copy` ops can otherwise double it each. */
export const MAX_PATCHED_CHARS = 1536 * 1024;
/** What a patch may reach of the VM, as KubeVirt's restore admission allows. */
const PATCHABLE = ["/spec/", "/metadata/labels/", "/metadata/annotations/"];
const RESTORE_MARK_POINTER = `/metadata/annotations/${LAST_RESTORE_ANNOTATION.replaceAll("/", "~1")}`;

export const restoreMarkOf = (restore: VirtualMachineRestore): string =>
  `${restore.metadata.name ?? ""}-${restore.metadata.uid ?? ""}`;

/** Whether the VM (or claim) is already what this restore made of it. */
export const restoredBy = (restore: VirtualMachineRestore, vm: VirtualMachine | undefined): boolean =>
  vm?.metadata.annotations?.[LAST_RESTORE_ANNOTATION] === restoreMarkOf(restore);

const hasCondition = (status: VirtualMachineRestoreStatus | undefined, type: string) =>
  (status?.conditions ?? []).some((c) => c.type === type && c.status === "True");

export const restoreFailed = (r: VirtualMachineRestore): boolean =>
  hasCondition(r.status, SnapshotConditionType.Failure);
export const restoreComplete = (r: VirtualMachineRestore): boolean => r.status?.complete === true;

/**
 * The restored claim's name (and its DataVolume's), as KubeVirt names it: an override's restoreName, else
 * `<target>-<volume>` under PrefixTargetName, else `restore-<restore uid>-<volume>`.
 */
export function restoredClaimName(restore: VirtualMachineRestore, volumeName: string): string {
  const override = restore.spec.volumeRestoreOverrides?.find((o) => o.volumeName === volumeName && o.restoreName);
  if (override?.restoreName) return override.restoreName;
  if (restore.spec.volumeRestorePolicy === VolumeRestorePolicy.PrefixTargetName)
    return `${restore.spec.target.name}-${volumeName}`.slice(0, 63).replace(/-+$/, "");
  return `restore-${restore.metadata.uid ?? ""}-${volumeName}`;
}

/**
 * Why the restore asks for what kubevirt-ts does not do, naming the field and what to do instead; undefined when it
 * asks for nothing of the kind. These fail the restore at once, as a bad request would.
 */
export function unsupported(restore: VirtualMachineRestore): string | undefined {
  const { spec } = restore;
  if (spec.volumeRestorePolicy === VolumeRestorePolicy.InPlace)
    return (
      "spec.volumeRestorePolicy: InPlace (deleting the VM's claims to restore under their names) is not supported; " +
      "leave it unset (RandomizeNames) or use PrefixTargetName"
    );
  for (const [i, o] of (spec.volumeRestoreOverrides ?? []).entries()) {
    for (const field of ["labels", "annotations"] as const)
      if (o[field] !== undefined && Object.keys(o[field]).length > 0)
        return (
          `spec.volumeRestoreOverrides[${String(i)}].${field}: labels and annotations of restored claims are not ` +
          "supported; only volumeName and restoreName are: remove them"
        );
    if (o.restoreName !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(o.restoreName))
      return (
        `spec.volumeRestoreOverrides[${String(i)}].restoreName: must be a DNS label (a-z, 0-9, '-'), ` +
        `got ${JSON.stringify(o.restoreName.slice(0, 80))}`
      );
  }
  const patches = spec.patches ?? [];
  if (patches.length > MAX_PATCHES)
    return `spec.patches: at most ${String(MAX_PATCHES)} patches, got ${String(patches.length)}`;
  for (const [i, p] of patches.entries()) {
    if (p.length > MAX_PATCH_CHARS)
      return `spec.patches[${String(i)}]: at most ${String(MAX_PATCH_CHARS)} characters, got ${String(p.length)}`;
    const problem = patchRefusal(p);
    if (problem !== undefined) return `spec.patches[${String(i)}]: ${problem}`;
  }
  return undefined;
}

/**
 * Why a restore's (or clone's) patch is refused, as KubeVirt's restore admission refuses it: not an operation, or
 * reaching more of the VM than its spec, labels and annotations (its name, namespace and the rest of its metadata are
 * the restore's to set), or the annotation that marks the VM restored. Undefined when it may be applied.
 */
export function patchRefusal(text: string): string | undefined {
  const op = parsePatch(text);
  if (typeof op === "string") return op;
  for (const pointer of [op.path, "from" in op ? op.from : undefined])
    if (pointer === undefined) continue;
    else if (!PATCHABLE.some((prefix) => pointer.startsWith(prefix)))
      return (
        `${JSON.stringify(pointer.slice(0, 80))}: only /spec/, /metadata/labels/ and /metadata/annotations/ ` +
        "can be patched"
      );
    else if (pointer === RESTORE_MARK_POINTER) return `${pointer}: the restore's own annotation cannot be patched`;
  return undefined;
}

export type Readiness =
  | { kind: "ready" }
  /** Wait for the user to stop the VM; the message goes on the conditions, with a Warning event. */
  | { kind: "wait"; message: string }
  | { kind: "stop"; message: string }
  | { kind: "fail"; message: string };

/**
 * Whether the restore may rewrite its target, as KubeVirt decides: it may once the target has no VMI (or does not
 * exist); else its targetReadinessPolicy says (WaitGracePeriod when unset: wait up to 5 minutes from the restore's
 * creation, then fail).
 */
export function targetReadiness(restore: VirtualMachineRestore, vmiExists: boolean, now: Date): Readiness {
  if (!vmiExists) return { kind: "ready" };
  const policy = restore.spec.targetReadinessPolicy ?? TargetReadinessPolicy.WaitGracePeriod;
  switch (policy) {
    case TargetReadinessPolicy.StopTarget:
      return { kind: "stop", message: "Stopping the restore target so that it can be restored" };
    case TargetReadinessPolicy.FailImmediate:
      return { kind: "fail", message: "The restore target must be stopped before it is restored" };
    case TargetReadinessPolicy.WaitEventually:
      return {
        kind: "wait",
        message: "Waiting for the restore target to be stopped: stop it to go on with the restore",
      };
    case TargetReadinessPolicy.WaitGracePeriod: {
      const created = Date.parse(restore.metadata.creationTimestamp ?? "") || now.getTime();
      if (now.getTime() - created > TARGET_GRACE_PERIOD_MS)
        return {
          kind: "fail",
          message: "The restore target was not stopped within 5m0s: stop the VM, then restore it again",
        };
      return {
        kind: "wait",
        message:
          "Waiting for the restore target to be stopped: stop it to go on with the restore, " +
          "or the restore fails after 5m0s",
      };
    }
  }
}

/** The snapshot's VM, as its content keeps it. */
export type SnapshotVm = NonNullable<VirtualMachineSnapshotContent["spec"]["source"]["virtualMachine"]>;

const templateOf = (vm: Pick<VirtualMachine, "spec">, dvName: string) =>
  (vm.spec.dataVolumeTemplates ?? []).find((t) => t.metadata.name === dvName);

/**
 * The status.restores of the restore: one per volume backup of the content, its claim named by restoredClaimName; a
 * volume backed by a DataVolumeTemplate of the snapshot's VM is restored as a DataVolume of the claim's name.
 */
export function volumeRestores(
  restore: VirtualMachineRestore,
  content: VirtualMachineSnapshotContent,
): NonNullable<VirtualMachineRestoreStatus["restores"]> | string {
  const vm = content.spec.source.virtualMachine;
  if (!vm) return "the snapshot's content holds no VirtualMachine";
  const restores: NonNullable<VirtualMachineRestoreStatus["restores"]> = [];
  for (const backup of content.spec.volumeBackups ?? []) {
    const copy = volumeCopyOf(content, backup.volumeName);
    if (copy === undefined) return `the snapshot's content names no copy of volume ${backup.volumeName}`;
    if (copy.kind !== "PersistentVolumeClaim")
      return (
        `volume ${backup.volumeName}: its copy is the CSI VolumeSnapshot ${copy.name}, which kubevirt-ts does not ` +
        "restore yet; only copies kept as claims (storage without CSI snapshots) are restored"
      );
    const name = restoredClaimName(restore, backup.volumeName);
    const volume = (vm.spec.template.spec.volumes ?? []).find((v) => v.name === backup.volumeName);
    const template = volume?.dataVolume ? templateOf(vm, volume.dataVolume.name) : undefined;
    restores.push({
      volumeName: backup.volumeName,
      persistentVolumeClaim: name,
      volumeSnapshotName: copy.name,
      ...(template ? { dataVolumeName: name } : {}),
    });
  }
  return restores;
}

interface ClaimSpecView {
  accessModes?: unknown;
  storageClassName?: unknown;
  resources?: { requests?: { storage?: unknown } };
}

/**
 * The DataVolume that fills a restored claim: named as the claim, cloned from the snapshot's copy claim by the
 * importer's pvc-clone pod, with the source claim's access modes, StorageClass and size. Owned by the target VM when
 * it exists (and volumeOwnershipPolicy is not None); a new VM takes it over once it is made.
 */
export function restoreDataVolume(
  restore: VirtualMachineRestore,
  vr: NonNullable<VirtualMachineRestoreStatus["restores"]>[number],
  backup: VolumeBackup,
  source: Pick<SnapshotVm, "metadata">,
  owner: VirtualMachine | undefined,
): DataVolume {
  const spec = (backup.persistentVolumeClaim.spec ?? {}) as ClaimSpecView;
  const accessModes = Array.isArray(spec.accessModes) ? spec.accessModes : undefined;
  const storage = spec.resources?.requests?.storage;
  const owned = owner !== undefined && restore.spec.volumeOwnershipPolicy !== "None";
  // A claim for a VM not made yet is the restore's until the VM takes it over (or no one does, under None): a
  // restore deleted half-way takes its copies with it.
  const ownerReferences = owned ? [vmOwnerRef(owner)] : owner === undefined ? [restoreOwnerRef(restore)] : undefined;
  return {
    apiVersion: CDI_API_VERSION,
    kind: "DataVolume",
    metadata: {
      name: vr.persistentVolumeClaim,
      namespace: restore.metadata.namespace,
      labels: {
        [RESTORE_SOURCE_NAME_LABEL]: source.metadata?.name ?? "",
        [RESTORE_SOURCE_NAMESPACE_LABEL]: source.metadata?.namespace ?? restore.metadata.namespace ?? "",
      },
      annotations: { [RESTORE_NAME_ANNOTATION]: restore.metadata.name ?? "" },
      ...(ownerReferences ? { ownerReferences } : {}),
    },
    spec: {
      source: { pvc: { namespace: restore.metadata.namespace ?? "", name: vr.volumeSnapshotName } },
      pvc: {
        ...(accessModes ? { accessModes } : {}),
        ...(typeof spec.storageClassName === "string" ? { storageClassName: spec.storageClassName } : {}),
        ...(typeof storage === "string" || typeof storage === "number"
          ? { resources: { requests: { storage: String(storage) } } }
          : {}),
      },
    },
  };
}

export const vmOwnerRef = (vm: VirtualMachine) =>
  controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachine, metadata: vm.metadata });

/** The restore as the interim owner of a claim it fills for a new VM (not its controller: the VM will be). */
export const restoreOwnerRef = (restore: VirtualMachineRestore) => ({
  apiVersion: SNAPSHOT_API_VERSION,
  kind: SnapshotKind.VirtualMachineRestore,
  name: restore.metadata.name ?? "",
  uid: restore.metadata.uid ?? "",
});

/** Whether a DataVolume is owned by no one or, for now, by the restore alone: the new VM (or no one) takes it over. */
export const heldForNewVm = (restore: VirtualMachineRestore, refs: readonly { uid: string }[] | undefined): boolean =>
  (refs ?? []).every((r) => r.uid === restore.metadata.uid);

/**
 * The target VM as the restore makes it, as KubeVirt's restore does: the snapshot's spec, with each restored volume on
 * its restored claim (a dataVolume volume with a template keeps it, renamed as the claim; one without becomes a
 * persistentVolumeClaim volume), annotated with the restore. An existing target keeps its metadata and its run
 * strategy (a legacy `running` VM is left stopped). A new target is made Halted, and so that it runs beside the
 * original, every MAC address and the firmware UUID it took from the snapshot are dropped (libvirt makes a new MAC;
 * the UUID follows the new VM's name): kubevirt-ts does this itself where KubeVirt leaves it to `patches`. The
 * patches are applied to a new target before that, as KubeVirt applies them; a MAC or UUID a patch sets is kept.
 */
export function restoredVm(
  restore: VirtualMachineRestore,
  snapshotVm: SnapshotVm,
  target: VirtualMachine | undefined,
): VirtualMachine | string {
  const restores = restore.status?.restores ?? [];
  const spec = structuredClone(snapshotVm.spec);
  const templates = spec.dataVolumeTemplates ?? [];
  spec.template.spec.volumes = (spec.template.spec.volumes ?? []).map((volume) => {
    const vr = restores.find((r) => r.volumeName === volume.name);
    if (!vr) return volume;
    if (volume.persistentVolumeClaim)
      return {
        ...volume,
        persistentVolumeClaim: { ...volume.persistentVolumeClaim, claimName: vr.persistentVolumeClaim },
      };
    if (!volume.dataVolume) return volume;
    const template = templates.find((t) => t.metadata.name === volume.dataVolume?.name);
    if (template) {
      template.metadata = { ...template.metadata, name: vr.persistentVolumeClaim };
      return { ...volume, dataVolume: { name: vr.persistentVolumeClaim } };
    }
    return { name: volume.name, persistentVolumeClaim: { claimName: vr.persistentVolumeClaim } };
  });
  const mark = { [LAST_RESTORE_ANNOTATION]: restoreMarkOf(restore) };
  if (target) {
    if (target.spec.running !== undefined) {
      spec.running = false;
      delete spec.runStrategy;
    } else {
      spec.runStrategy = runStrategyOf(target.spec);
      delete spec.running;
    }
    return {
      ...target,
      metadata: { ...target.metadata, annotations: { ...target.metadata.annotations, ...mark } },
      spec,
    };
  }
  if (spec.running !== undefined) spec.running = false;
  else spec.runStrategy = "Halted";
  const made: VirtualMachine = {
    apiVersion: API_VERSION,
    kind: Kind.VirtualMachine,
    metadata: {
      name: restore.spec.target.name,
      namespace: restore.metadata.namespace,
      ...(snapshotVm.metadata?.labels ? { labels: { ...snapshotVm.metadata.labels } } : {}),
      annotations: { ...snapshotVm.metadata?.annotations, ...mark },
    },
    spec,
  };
  const patched = applyJsonPatches(made, restore.spec.patches ?? []);
  if (typeof patched === "string") return `spec.patches: ${patched}`;
  const vm = patched as VirtualMachine;
  renewIdentity(vm, snapshotVm);
  return vm;
}

/** Drops the MACs and the firmware UUID the new VM still has from the snapshot's VM (not those a patch set). */
function renewIdentity(vm: VirtualMachine, snapshotVm: SnapshotVm): void {
  const old = snapshotVm.spec.template.spec.domain;
  const domain = vm.spec.template.spec.domain;
  const oldMacs = new Set((old.devices.interfaces ?? []).flatMap((i) => (i.macAddress ? [i.macAddress] : [])));
  for (const iface of domain.devices.interfaces ?? [])
    if (iface.macAddress !== undefined && oldMacs.has(iface.macAddress)) delete iface.macAddress;
  if (domain.firmware?.uuid !== undefined && domain.firmware.uuid === old.firmware?.uuid) {
    delete domain.firmware.uuid;
    if (Object.keys(domain.firmware).length === 0) delete domain.firmware;
  }
}

/** KubeVirt's status.deletedDataVolumes: the target's DataVolumeTemplates the restored VM no longer has. */
export function deletedDataVolumes(before: VirtualMachine | undefined, after: Pick<VirtualMachine, "spec">): string[] {
  const kept = new Set((after.spec.dataVolumeTemplates ?? []).map((t) => t.metadata.name));
  return (before?.spec.dataVolumeTemplates ?? []).map((t) => t.metadata.name).filter((name) => !kept.has(name));
}

/** Sets the restore's Progressing and Ready conditions, as KubeVirt's: the reason is also the message. */
export function withConditions(
  status: VirtualMachineRestoreStatus,
  progressing: boolean,
  ready: boolean,
  reason: string,
  now: Date,
  failure?: string,
): VirtualMachineRestoreStatus {
  let conditions = status.conditions ?? [];
  const set = (type: string, value: boolean, why: string) => {
    conditions = setCondition<Condition>(
      conditions,
      { type, status: value ? "True" : "False", reason: why, message: why },
      now,
    );
  };
  set(SnapshotConditionType.Progressing, progressing, reason);
  set(SnapshotConditionType.Ready, ready, reason);
  if (failure !== undefined) set(SnapshotConditionType.Failure, true, failure);
  return { ...status, conditions };
}

// RFC 6902 JSON patches, as KubeVirt applies spec.patches: each string one operation object.

type Op =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "move" | "copy"; from: string; path: string };

/** Tokens that would reach an object's prototype rather than its own keys. */
const FORBIDDEN_TOKENS = new Set(["__proto__", "constructor", "prototype"]);

const tokens = (pointer: string): string[] =>
  pointer === ""
    ? []
    : pointer
        .slice(1)
        .split("/")
        .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));

/** One patch string as an operation, or why it is not one. */
export function parsePatch(text: string): Op | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return (
      "not JSON: each patch is one JSON object such as " + '{"op": "replace", "path": "/spec/running", "value": false}'
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "must be one JSON object with op and path";
  const o = value as Record<string, unknown>;
  if (typeof o.path !== "string" || (o.path !== "" && !o.path.startsWith("/")))
    return "path must be a JSON pointer such as /spec/template";
  for (const pointer of [o.path, o.from])
    if (typeof pointer === "string" && tokens(pointer).some((t) => FORBIDDEN_TOKENS.has(t)))
      return `${JSON.stringify(pointer.slice(0, 80))}: __proto__, constructor and prototype cannot be patched`;
  switch (o.op) {
    case "add":
    case "replace":
    case "test":
      if (!("value" in o)) return `${o.op} needs a value`;
      return { op: o.op, path: o.path, value: o.value };
    case "remove":
      return { op: "remove", path: o.path };
    case "move":
    case "copy":
      if (typeof o.from !== "string") return `${o.op} needs from, a JSON pointer`;
      return { op: o.op, from: o.from, path: o.path };
    default:
      return `op must be add, remove, replace, move, copy or test, got ${JSON.stringify(String(o.op).slice(0, 40))}`;
  }
}

type Container = Record<string, unknown> | unknown[];

/** The parent of the pointer's target and its last token, or why there is none. */
function locate(doc: unknown, pointer: string): { parent: Container; key: string } | string {
  const path = tokens(pointer);
  const key = path.pop();
  if (key === undefined) return "the whole document cannot be patched";
  let node: unknown = doc;
  for (const t of path) {
    node = child(node, t);
    if (node === undefined) return `${pointer}: ${t} does not exist`;
  }
  if (typeof node !== "object" || node === null) return `${pointer}: its parent is not an object or array`;
  return { parent: node as Container, key };
}

/** A node's own member named by a token (never one it inherits), or undefined. */
function child(node: unknown, t: string): unknown {
  if (typeof node !== "object" || node === null || FORBIDDEN_TOKENS.has(t)) return undefined;
  if (Array.isArray(node)) return /^(0|[1-9][0-9]*)$/.test(t) ? node[Number(t)] : undefined;
  return Object.hasOwn(node, t) ? (node as Record<string, unknown>)[t] : undefined;
}

function get(doc: unknown, pointer: string): unknown {
  let node: unknown = doc;
  for (const t of tokens(pointer)) node = child(node, t);
  return node;
}

function index(parent: unknown[], key: string, adding: boolean): number | undefined {
  if (adding && key === "-") return parent.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) return undefined;
  const i = Number(key);
  return i < parent.length + (adding ? 1 : 0) ? i : undefined;
}

function put(doc: unknown, pointer: string, value: unknown, replace: boolean): string | undefined {
  const at = locate(doc, pointer);
  if (typeof at === "string") return at;
  if (Array.isArray(at.parent)) {
    const i = index(at.parent, at.key, !replace);
    if (i === undefined) return `${pointer}: no such array index`;
    at.parent.splice(i, replace ? 1 : 0, structuredClone(value));
    return undefined;
  }
  if (FORBIDDEN_TOKENS.has(at.key)) return `${pointer}: ${at.key} cannot be patched`;
  if (replace && !Object.hasOwn(at.parent, at.key)) return `${pointer}: does not exist`;
  at.parent[at.key] = structuredClone(value);
  return undefined;
}

function remove(doc: unknown, pointer: string): string | undefined {
  const at = locate(doc, pointer);
  if (typeof at === "string") return at;
  if (Array.isArray(at.parent)) {
    const i = index(at.parent, at.key, false);
    if (i === undefined) return `${pointer}: no such array index`;
    at.parent.splice(i, 1);
    return undefined;
  }
  if (!Object.hasOwn(at.parent, at.key)) return `${pointer}: does not exist`;
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- a JSON pointer names the key
  delete at.parent[at.key];
  return undefined;
}

/** The document with the patches applied in order (a copy), or why one of them does not apply. */
export function applyJsonPatches(doc: object, patches: readonly string[]): object | string {
  const out = structuredClone(doc);
  for (const [i, text] of patches.entries()) {
    const op = parsePatch(text);
    const where = `patch ${String(i)}`;
    if (typeof op === "string") return `${where}: ${op}`;
    let problem: string | undefined;
    switch (op.op) {
      case "add":
        problem = put(out, op.path, op.value, false);
        break;
      case "replace":
        problem = put(out, op.path, op.value, true);
        break;
      case "remove":
        problem = remove(out, op.path);
        break;
      case "test":
        if (JSON.stringify(get(out, op.path)) !== JSON.stringify(op.value)) problem = `${op.path}: test failed`;
        break;
      case "copy":
      case "move": {
        const value = get(out, op.from);
        if (value === undefined) problem = `${op.from}: does not exist`;
        else {
          problem = op.op === "move" ? remove(out, op.from) : undefined;
          problem ??= put(out, op.path, value, false);
        }
        break;
      }
    }
    if (problem !== undefined) return `${where}: ${problem}`;
    const size = JSON.stringify(out).length;
    if (size > MAX_PATCHED_CHARS)
      return (
        `${where}: the patched VM would be ${String(size)} characters, more than ${String(MAX_PATCHED_CHARS)}: ` +
        "patch less of it"
      );
  }
  return out;
}
