import { defaultVmiSpec, withImplicitDevices } from "../defaults.ts";
import { parseQuantity } from "../quantity.ts";
import type { InstancetypeSpec, PreferenceSpec } from "../schema/instancetype.ts";
import type { VmSpec, VmStatus } from "../schema/vm.ts";
import type { VmiSpec } from "../schema/vmi.ts";
import type { Causes } from "../validation/causes.ts";

// KubeVirt's expansion of a VM's instancetype and preference into its VMI
// spec (pkg/instancetype/apply and preference/apply): the instancetype sets
// the vCPUs and memory, and whatever it sets the template must leave alone
// (a conflict, even at the same value, as KubeVirt refuses it); the
// preference then fills in only what the template leaves unset, and its
// requirements are checked against the result. Pure: the caller fetches the
// objects (webhooks, controller, expand-spec) and says where errors point.

/** An instancetype or preference as found, with the name it was asked for by. */
export interface Source<S> {
  name: string;
  spec: S;
}

export interface ExpansionSources {
  instancetype?: Source<InstancetypeSpec> | undefined;
  preference?: Source<PreferenceSpec> | undefined;
}

export interface Expanded {
  spec: VmiSpec;
  /** What the VMI's metadata.annotations gets: the template's, then the instancetype's, then the preference's. */
  annotations: Record<string, string> | undefined;
}

export interface Topology {
  sockets: number;
  cores: number;
  threads: number;
}

type Layout = "sockets" | "cores" | "threads" | "spread";

function layoutOf(preference: PreferenceSpec | undefined): Layout {
  const named = preference?.cpu?.preferredCPUTopology ?? "sockets";
  const plain = named.startsWith("prefer") ? named.slice("prefer".length).toLowerCase() : named;
  return plain === "any" ? "sockets" : (plain as Layout);
}

/**
 * How the preference lays out `guest` vCPUs, or why it cannot: KubeVirt's rules, sockets unless the preference says
 * otherwise, and spread as `ratio` (2 unless set) cores per socket (or threads per core).
 */
export function vcpuTopology(guest: number, preference: PreferenceSpec | undefined): Topology | string {
  const topology: Topology = { sockets: 1, cores: 1, threads: 1 };
  if (guest <= 1) return topology;
  const layout = layoutOf(preference);
  if (layout !== "spread") return { ...topology, [layout]: guest };
  const across = preference?.cpu?.spreadOptions?.across ?? "SocketsCores";
  const ratio = preference?.cpu?.spreadOptions?.ratio ?? 2;
  const per = across === "SocketsCoresThreads" ? 2 * ratio : ratio;
  if (ratio < 1 || guest % per !== 0)
    return (
      `${guest} vCPUs cannot be spread ${per} to a ${across === "CoresThreads" ? "core" : "socket"} ` +
      `(the preference's spreadOptions): choose a multiple of ${per}`
    );
  if (across === "CoresThreads") return { ...topology, cores: guest / ratio, threads: ratio };
  if (across === "SocketsCoresThreads") return { sockets: guest / per, cores: ratio, threads: 2 };
  return { ...topology, sockets: guest / ratio, cores: ratio };
}

const CONFLICT = "conflicts with selected instance type";

/** The template's fields that the instancetype sets: KubeVirt refuses each, whatever its value. */
function conflicts(spec: VmiSpec, instancetype: InstancetypeSpec, path: string): string[] {
  const found: string[] = [];
  const domain = spec.domain;
  for (const key of ["sockets", "cores", "threads"] as const)
    if ((domain.cpu?.[key] ?? 0) !== 0) found.push(`${path}.domain.cpu.${key}`);
  if (domain.cpu?.model !== undefined && instancetype.cpu.model !== undefined) found.push(`${path}.domain.cpu.model`);
  for (const kind of ["requests", "limits"] as const) {
    for (const name of ["cpu", "memory"] as const)
      if (domain.resources?.[kind]?.[name] !== undefined) found.push(`${path}.domain.resources.${kind}.${name}`);
  }
  if (domain.memory?.guest !== undefined) found.push(`${path}.domain.memory.guest`);
  if (spec.nodeSelector !== undefined && instancetype.nodeSelector !== undefined) found.push(`${path}.nodeSelector`);
  return found;
}

function applyInstancetype(
  spec: VmiSpec,
  instancetype: InstancetypeSpec,
  preference: PreferenceSpec | undefined,
  path: string,
  causes: Causes,
): void {
  const topology = vcpuTopology(instancetype.cpu.guest, preference);
  if (typeof topology === "string") {
    causes.invalid(`${path}.domain.cpu`, `cannot take the instancetype's vCPUs: ${topology}`);
  } else {
    spec.domain.cpu = {
      ...spec.domain.cpu,
      ...topology,
      ...(instancetype.cpu.model !== undefined ? { model: instancetype.cpu.model } : {}),
    };
  }
  spec.domain.memory = { ...spec.domain.memory, guest: instancetype.memory.guest };
  const percent = instancetype.memory.overcommitPercent ?? 0;
  const guestBytes = parseQuantity(instancetype.memory.guest);
  if (percent > 0 && guestBytes !== undefined) {
    const request = Math.ceil((guestBytes * (100 - percent)) / 100);
    spec.domain.resources = {
      ...spec.domain.resources,
      requests: { ...spec.domain.resources?.requests, memory: String(request) },
    };
  }
  if (instancetype.nodeSelector) spec.nodeSelector = { ...instancetype.nodeSelector };
}

/**
 * A preference's TPM, features and clock (what a Windows preference carries), each only where the template sets none,
 * as KubeVirt applies them.
 */
function applyGuestOsPreferences(spec: VmiSpec, preference: PreferenceSpec): void {
  const domain = spec.domain;
  const tpm = preference.devices?.preferredTPM;
  if (tpm && domain.devices.tpm === undefined) domain.devices.tpm = { ...tpm };
  const wanted = preference.features;
  if (wanted) {
    const current = domain.features ?? {};
    const pairs = [
      ["acpi", wanted.preferredAcpi],
      ["apic", wanted.preferredApic],
      ["hyperv", wanted.preferredHyperv],
      ["kvm", wanted.preferredKvm],
      ["pvspinlock", wanted.preferredPvspinlock],
      ["smm", wanted.preferredSmm],
    ] as const;
    const filled = { ...current };
    for (const [name, value] of pairs)
      if (value !== undefined && current[name] === undefined) Object.assign(filled, { [name]: structuredClone(value) });
    // Hyper-V enlightenments one by one: those the template names stay, the preference's others are added.
    if (wanted.preferredHyperv && current.hyperv)
      filled.hyperv = { ...structuredClone(wanted.preferredHyperv), ...current.hyperv };
    if (pairs.some(([, value]) => value !== undefined)) domain.features = filled;
  }
  const offset = preference.clock?.preferredClockOffset;
  const timer = preference.clock?.preferredTimer;
  if (offset || timer) {
    const current = domain.clock;
    const hasOffset = current?.utc !== undefined || current?.timezone !== undefined;
    domain.clock = {
      ...current,
      ...(!hasOffset && offset ? structuredClone(offset) : {}),
      ...(current?.timer === undefined && timer ? { timer: structuredClone(timer) } : {}),
    };
  }
}

function applyPreference(spec: VmiSpec, preference: PreferenceSpec): void {
  const devices = spec.domain.devices;
  const prefers = preference.devices ?? {};
  devices.disks = devices.disks?.map((d) => {
    const disk = { ...d };
    if (disk.disk && disk.disk.bus === undefined && prefers.preferredDiskBus)
      disk.disk = { ...disk.disk, bus: prefers.preferredDiskBus };
    if (disk.cdrom && disk.cdrom.bus === undefined && prefers.preferredCdromBus)
      disk.cdrom = { ...disk.cdrom, bus: prefers.preferredCdromBus };
    if (disk.lun && disk.lun.bus === undefined && prefers.preferredLunBus)
      disk.lun = { ...disk.lun, bus: prefers.preferredLunBus };
    if (disk.cache === undefined && prefers.preferredDiskCache) disk.cache = prefers.preferredDiskCache;
    return disk;
  });
  devices.interfaces = devices.interfaces?.map((i) =>
    i.model === undefined && prefers.preferredInterfaceModel ? { ...i, model: prefers.preferredInterfaceModel } : i,
  );
  if (devices.rng === undefined && prefers.preferredRng) devices.rng = { ...prefers.preferredRng };
  if (devices.autoattachSerialConsole === undefined && prefers.preferredAutoattachSerialConsole !== undefined)
    devices.autoattachSerialConsole = prefers.preferredAutoattachSerialConsole;
  if (devices.autoattachGraphicsDevice === undefined && prefers.preferredAutoattachGraphicsDevice !== undefined)
    devices.autoattachGraphicsDevice = prefers.preferredAutoattachGraphicsDevice;
  if (devices.autoattachPodInterface === undefined && prefers.preferredAutoattachPodInterface !== undefined)
    devices.autoattachPodInterface = prefers.preferredAutoattachPodInterface;
  if (devices.autoattachMemBalloon === undefined && prefers.preferredAutoattachMemBalloon !== undefined)
    devices.autoattachMemBalloon = prefers.preferredAutoattachMemBalloon;

  const firmware = preference.firmware;
  const bootloader = spec.domain.firmware?.bootloader;
  if (firmware && !bootloader?.bios && !bootloader?.efi) {
    const efi: { secureBoot?: boolean | undefined; persistent?: boolean | undefined } | undefined =
      firmware.preferredEfi ?? (firmware.preferredUseEfi ? { secureBoot: firmware.preferredUseSecureBoot } : undefined);
    if (efi) {
      const { secureBoot, persistent } = efi;
      spec.domain.firmware = {
        ...spec.domain.firmware,
        bootloader: {
          efi: {
            ...(secureBoot !== undefined ? { secureBoot } : {}),
            ...(persistent !== undefined ? { persistent } : {}),
          },
        },
      };
    } else if (firmware.preferredUseBios) spec.domain.firmware = { ...spec.domain.firmware, bootloader: { bios: {} } };
  }
  applyGuestOsPreferences(spec, preference);
  const machineType = preference.machine?.preferredMachineType;
  if (spec.domain.machine?.type === undefined && machineType !== undefined)
    spec.domain.machine = { ...spec.domain.machine, type: machineType };
  if (
    spec.terminationGracePeriodSeconds === undefined &&
    preference.preferredTerminationGracePeriodSeconds !== undefined
  )
    spec.terminationGracePeriodSeconds = preference.preferredTerminationGracePeriodSeconds;
  if (spec.architecture === undefined && preference.preferredArchitecture !== undefined)
    spec.architecture = preference.preferredArchitecture;
  if (spec.subdomain === undefined && preference.preferredSubdomain !== undefined)
    spec.subdomain = preference.preferredSubdomain;
}

function vcpusOf(spec: VmiSpec): number {
  const cpu = spec.domain.cpu ?? {};
  return (cpu.sockets ?? 1) * (cpu.cores ?? 1) * (cpu.threads ?? 1);
}

/** The preference's least vCPUs and memory, against what the instancetype or the template gives. */
function checkRequirements(spec: VmiSpec, sources: ExpansionSources, path: string, causes: Causes): void {
  const requirements = sources.preference?.spec.requirements;
  if (!requirements) return;
  const fromInstancetype = sources.instancetype !== undefined;
  const providedBy = fromInstancetype ? "instance type" : "VirtualMachine";
  const required = requirements.cpu?.guest;
  if (required !== undefined && vcpusOf(spec) < required) {
    const field = fromInstancetype ? "spec.instancetype" : `${path}.domain.cpu.${layoutOf(sources.preference?.spec)}`;
    causes.notFound(
      field,
      `gives ${vcpusOf(spec)} vCPU and the preference ${sources.preference?.name ?? ""} requires ${required} ` +
        `vCPU (failure checking preference requirements: insufficient CPU resources of ${vcpusOf(spec)} vCPU ` +
        `provided by ${providedBy}): choose a larger instancetype or give more vCPUs`,
    );
  }
  const requiredMemory = requirements.memory?.guest;
  const memory = spec.domain.memory?.guest ?? spec.domain.resources?.requests?.memory;
  const have = memory === undefined ? 0 : (parseQuantity(memory) ?? 0);
  const need = requiredMemory === undefined ? undefined : parseQuantity(requiredMemory);
  if (requiredMemory !== undefined && need !== undefined && have < need) {
    const field = fromInstancetype ? "spec.instancetype" : `${path}.domain.memory.guest`;
    causes.notFound(
      field,
      `gives ${String(memory ?? "no")} memory and the preference ${sources.preference?.name ?? ""} ` +
        `requires ${String(requiredMemory)} (failure checking preference requirements: insufficient Memory ` +
        `resources provided by ${providedBy}): choose a larger instancetype or give more memory`,
    );
  }
}

/**
 * The VMI spec and annotations a VM's template expands to with its instancetype and preference, as KubeVirt expands
 * it; problems go to `causes`, at the template's paths (`path`, e.g. spec.template.spec) or at spec.instancetype.
 */
export function expandVmiSpec(
  template: { spec: VmiSpec; annotations?: Record<string, string> | undefined },
  sources: ExpansionSources,
  path: string,
  causes: Causes,
): Expanded {
  const { instancetype, preference } = sources;
  if (!instancetype && !preference) return { spec: template.spec, annotations: template.annotations };
  const spec = withImplicitDevices(template.spec);
  if (instancetype) {
    const found = conflicts(template.spec, instancetype.spec, path);
    const annotationsPath = `${path.replace(/\.spec$/, "")}.metadata.annotations`;
    for (const [key, value] of Object.entries(instancetype.spec.annotations ?? {})) {
      const own = template.annotations?.[key];
      if (own !== undefined && own !== value) found.push(`${annotationsPath}.${key}`);
    }
    for (const field of found)
      causes.invalid(
        field,
        `${CONFLICT} ${instancetype.name}, which sets it: remove it from the template, or drop spec.instancetype`,
      );
    if (found.length === 0) applyInstancetype(spec, instancetype.spec, preference?.spec, path, causes);
  }
  if (preference) applyPreference(spec, preference.spec);
  checkRequirements(spec, sources, path, causes);
  const annotations = { ...preference?.spec.annotations, ...instancetype?.spec.annotations, ...template.annotations };
  return { spec, annotations: Object.keys(annotations).length > 0 ? annotations : undefined };
}

/**
 * KubeVirt's expand-spec: the VM with its instancetype and preference applied and VMI defaults filled in, without
 * spec.instancetype, spec.preference or their status references. A VM without either comes back as it is.
 */
export function expandVirtualMachine<V extends { spec: VmSpec; status?: VmStatus | undefined }>(
  vm: V,
  sources: ExpansionSources,
  causes: Causes,
): V {
  if (!vm.spec.instancetype && !vm.spec.preference) return vm;
  const template = vm.spec.template;
  const expanded = expandVmiSpec(
    { spec: template.spec, annotations: template.metadata?.annotations },
    sources,
    "spec.template.spec",
    causes,
  );
  const result = structuredClone({
    ...vm,
    spec: { ...vm.spec, template: { ...template, spec: defaultVmiSpec(expanded.spec) } },
  });
  delete result.spec.instancetype;
  delete result.spec.preference;
  if (expanded.annotations)
    result.spec.template.metadata = { ...result.spec.template.metadata, annotations: expanded.annotations };
  if (result.status) {
    delete result.status.instancetypeRef;
    delete result.status.preferenceRef;
  }
  return result;
}
