import { DEFAULT_NETWORK_NAME, type DiskBus, RunStrategy } from "./constants.ts";
import { parseQuantity } from "./quantity.ts";
import type { VirtualMachine, VmSpec } from "./schema/vm.ts";
import type { Disk, VirtualMachineInstance, VmiSpec } from "./schema/vmi.ts";

// KubeVirt's defaulting (its mutating webhook and object defaults) for the
// supported fields. Every function returns a new object and leaves its input
// alone, so objects from an informer cache can be passed in safely.

export interface DefaultingOptions {
  /**
   * The binding of the pod interface added when a VMI lists no networks.
   * KubeVirt's configuration knob of the same name defaults to bridge;
   * kubevirt-ts defaults to masquerade, the binding it implements first.
   */
  defaultNetworkInterface: "masquerade" | "bridge";
  /** The bus of a disk that names none; KubeVirt uses sata on amd64. */
  defaultDiskBus: DiskBus;
  machineType: string;
  /** The CPU model of a VMI that names none (the KubeVirt CR's cpuModel); unset: none. */
  cpuModel?: string | undefined;
}

export const DEFAULTING_OPTIONS: DefaultingOptions = {
  defaultNetworkInterface: "masquerade",
  defaultDiskBus: "sata",
  machineType: "q35",
};

/** The run strategy in effect: `running: true` means Always, false or unset Halted. */
export function runStrategyOf(spec: Pick<VmSpec, "running" | "runStrategy">): RunStrategy {
  if (spec.runStrategy !== undefined) return spec.runStrategy;
  return spec.running === true ? RunStrategy.Always : RunStrategy.Halted;
}

function defaultDisk(disk: Disk, bus: DiskBus): Disk {
  const result = { ...disk };
  if (result.disk) result.disk = { ...result.disk, bus: result.disk.bus ?? bus };
  if (result.lun) result.lun = { ...result.lun, bus: result.lun.bus ?? bus };
  if (result.cdrom) {
    result.cdrom = {
      ...result.cdrom,
      bus: result.cdrom.bus ?? bus,
      readonly: result.cdrom.readonly ?? true,
      tray: result.cdrom.tray ?? "closed",
    };
  }
  return result;
}

/**
 * The devices KubeVirt adds before anything else applies (a preference's buses and models among them): a disk for each
 * volume no disk attaches, a disk target for a disk that names none, and the pod network's interface when the spec
 * lists no network.
 */
export function withImplicitDevices(spec: VmiSpec, options: DefaultingOptions = DEFAULTING_OPTIONS): VmiSpec {
  const result = structuredClone(spec);
  const disks = spec.domain.devices.disks ?? [];
  const named = new Set(disks.map((d) => d.name));
  const implicit = (spec.volumes ?? []).filter((v) => !named.has(v.name)).map((v): Disk => ({ name: v.name }));
  const all = [...disks, ...implicit].map((d): Disk => (d.disk || d.cdrom || d.lun ? { ...d } : { ...d, disk: {} }));
  if (all.length > 0) result.domain.devices.disks = all;
  const { networks, interfaces } = defaultNetworks(spec, options.defaultNetworkInterface);
  if (interfaces) result.domain.devices.interfaces = interfaces;
  if (networks) result.networks = networks;
  return result;
}

function defaultCpu(spec: VmiSpec): VmiSpec["domain"]["cpu"] {
  const cpu = spec.domain.cpu ?? {};
  if (cpu.cores === undefined && cpu.sockets === undefined && cpu.threads === undefined) {
    const fromResources = spec.domain.resources?.limits?.cpu ?? spec.domain.resources?.requests?.cpu;
    const parsed = fromResources === undefined ? undefined : parseQuantity(fromResources);
    const sockets = parsed !== undefined && parsed > 0 ? Math.ceil(parsed) : 1;
    return { ...cpu, sockets, cores: 1, threads: 1 };
  }
  return { ...cpu, sockets: cpu.sockets ?? 1, cores: cpu.cores ?? 1, threads: cpu.threads ?? 1 };
}

function defaultResources(spec: VmiSpec): VmiSpec["domain"]["resources"] {
  const resources = spec.domain.resources;
  const limitCpu = resources?.limits?.cpu;
  if (!resources || limitCpu === undefined || resources.requests?.cpu !== undefined) return resources;
  return { ...resources, requests: { ...resources.requests, cpu: limitCpu } };
}

function defaultNetworks(
  spec: VmiSpec,
  binding: DefaultingOptions["defaultNetworkInterface"],
): Pick<VmiSpec, "networks"> & { interfaces: VmiSpec["domain"]["devices"]["interfaces"] } {
  const interfaces = spec.domain.devices.interfaces;
  const networks = spec.networks;
  const wantsPod = spec.domain.devices.autoattachPodInterface !== false;
  if (!wantsPod || (interfaces?.length ?? 0) > 0 || (networks?.length ?? 0) > 0) return { networks, interfaces };
  return {
    networks: [{ name: DEFAULT_NETWORK_NAME, pod: {} }],
    interfaces: [{ name: DEFAULT_NETWORK_NAME, [binding]: {} }],
  };
}

/** A VMI spec with KubeVirt's defaults filled in. */
export function defaultVmiSpec(spec: VmiSpec, options: DefaultingOptions = DEFAULTING_OPTIONS): VmiSpec {
  const result = withImplicitDevices(spec, options);
  const guest =
    spec.domain.memory?.guest ?? spec.domain.resources?.requests?.memory ?? spec.domain.resources?.limits?.memory;

  const cpu = defaultCpu(spec);
  result.domain.cpu =
    cpu?.model === undefined && options.cpuModel !== undefined ? { ...cpu, model: options.cpuModel } : cpu;
  if (guest !== undefined) result.domain.memory = { ...result.domain.memory, guest };
  const resources = defaultResources(spec);
  if (resources) result.domain.resources = resources;
  result.domain.machine = { ...result.domain.machine, type: spec.domain.machine?.type ?? options.machineType };
  // KubeVirt's default architecture: the cluster's, amd64 here.
  result.architecture = spec.architecture ?? "amd64";
  result.domain.devices.disks = (result.domain.devices.disks ?? []).map((d) => defaultDisk(d, options.defaultDiskBus));
  // KubeVirt's default for EFI: secure boot (with SMM, which the launcher turns on for it).
  const efi = result.domain.firmware?.bootloader?.efi;
  if (efi && efi.secureBoot === undefined) efi.secureBoot = true;
  return result;
}

export function defaultVirtualMachineInstance(
  vmi: VirtualMachineInstance,
  options: DefaultingOptions = DEFAULTING_OPTIONS,
): VirtualMachineInstance {
  return { ...structuredClone(vmi), spec: defaultVmiSpec(vmi.spec, options) };
}

/**
 * A VM with its template defaulted. A VM with an instancetype or preference keeps its template as written, as
 * KubeVirt's: defaults there would conflict with the instancetype or hide the preference; its VMI gets them.
 */
export function defaultVirtualMachine(
  vm: VirtualMachine,
  options: DefaultingOptions = DEFAULTING_OPTIONS,
): VirtualMachine {
  const result = structuredClone(vm);
  if (vm.spec.instancetype || vm.spec.preference) return result;
  result.spec.template.spec = defaultVmiSpec(vm.spec.template.spec, options);
  return result;
}
