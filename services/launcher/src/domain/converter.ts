import { createHash } from "node:crypto";
import {
  type Clock,
  type Disk,
  type Features,
  type VirtualMachineInstance,
  parseQuantity,
} from "@kubevirt-ts/kubevirt-api";
import { diskBus, diskTargets, hasPersistentTpm, tbCacheBytes } from "@kubevirt-ts/vm-rules";
import { PodNetworkLinks, keepsSerialLog } from "@kubevirt-ts/node-contract";
import { type XmlElement, el, renderXml } from "./xml.ts";

// The libvirt domain of a VMI: a pure function of the VMI's (defaulted) spec
// and of where the launcher put things (disk files, sockets), so that every
// device mapping is tested by table without libvirt.

export type DomainType = "kvm" | "qemu";

/**
 * The domain's UUID: the VMI's firmware.uuid, or else a stable name-based (v5-style) one from its namespace and name.
 */
export function firmwareUuid(vmi: VirtualMachineInstance): string {
  if (vmi.spec.domain.firmware?.uuid) return vmi.spec.domain.firmware.uuid;
  const hash = createHash("sha1")
    .update(`kubevirt-ts/${vmi.metadata.namespace ?? ""}/${vmi.metadata.name ?? ""}`)
    .digest("hex");
  const variant = ((parseInt(hash.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
  return (
    `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-${variant}` +
    `${hash.slice(18, 20)}-${hash.slice(20, 32)}`
  );
}

export interface PreparedDisk {
  path: string;
  format: "qcow2" | "raw";
  /**
   * true: the guest must not write it (a read-only claim). "unlessSata": the launcher's own images (cloud-init,
   * ConfigMaps), read-only where the bus allows it; libvirt makes no SATA disk read-only, and KubeVirt marks these
   * disks no read-only at all (each is the pod's own copy).
   */
  readonly?: true | "unlessSata";
  /** A file (the default) or a block device (a Block-mode claim). */
  type?: "file" | "block";
}

export interface DomainContext {
  domainType: DomainType;
  uuid: string;
  /** The file behind each volume, as the launcher prepared it, by volume name. */
  disks: Record<string, PreparedDisk>;
  serialSocket: string;
  /** Where virtlogd keeps a copy of everything the serial console printed. */
  serialLog?: string;
  vncSocket: string;
  /** The QEMU guest agent's socket; libvirt's own choice of path would be too long for a unix socket. */
  guestAgentSocket: string;
  /** The kernel and initrd of a kernelBoot, copied out of their image. */
  kernelBoot?: { kernel?: string; initrd?: string };
  /** The EFI variables' file, when the VMI keeps them across restarts (efi.persistent). */
  nvram?: string;
  /**
   * The guest's interface on the pod network: the pod interface's MTU, and under the bridge binding the MAC the guest
   * takes unless the interface names one (unset: libvirt's defaults).
   */
  podInterface?: { mtu: number; mac?: string };
}

/**
 * What the launcher found at /dev/kvm: a device it opened read-write, nothing, or a device its user may not open
 * (the error's code, and the device's mode and owner as the container sees them).
 */
export type KvmProbe =
  | { state: "usable" }
  | { state: "missing" }
  | { state: "denied"; code: string; mode?: number; uid?: number; gid?: number };

/** Why KVM cannot be used, and what fixes it; undefined when it can. */
export function kvmUnusableReason(kvm: KvmProbe, path: string, uid: number): string | undefined {
  switch (kvm.state) {
    case "usable":
      return undefined;
    case "missing":
      return (
        `${path} is not in the launcher's container: the node's handler gives it to pods that ask for ` +
        `devices.kubevirt.io/kvm, which it advertises only where the node has ${path}`
      );
    case "denied": {
      const device =
        kvm.mode === undefined
          ? ""
          : `, the device being mode ${(kvm.mode & 0o777).toString(8).padStart(4, "0")} and ` +
            `owned by ${String(kvm.uid)}:${String(kvm.gid)}`;
      return (
        `${path} is in the launcher's container but its user ${String(uid)} cannot open it read-write ` +
        `(${kvm.code}${device}): let that user open it, with the node's ${path} at mode 0666 (a udev rule, ` +
        "as most distributions ship) or with containerd's device_ownership_from_security_context = true, " +
        "which gives a pod's devices to its runAsUser"
      );
    }
  }
}

/** Whether the domain can run, and how: KVM when it works, QEMU's emulation only where allowed. */
export function chooseDomainType(options: {
  kvm: KvmProbe;
  allowEmulation: boolean;
  path: string;
  uid: number;
}): DomainType {
  const unusable = kvmUnusableReason(options.kvm, options.path, options.uid);
  if (unusable === undefined) return "kvm";
  if (options.allowEmulation) return "qemu";
  throw new Error(
    `KVM is unusable and software emulation is not allowed (useEmulation is off): ${unusable}; or ` +
      "enable useEmulation in the KubeVirt CR's developerConfiguration",
  );
}

/** libvirt's name for the domain of a VMI, as KubeVirt's: namespace_name. */
export function domainName(vmi: VirtualMachineInstance): string {
  return `${vmi.metadata.namespace ?? "default"}_${vmi.metadata.name ?? ""}`;
}

function targetType(disk: Disk): { device: "disk" | "cdrom" | "lun"; readonly: boolean } {
  if (disk.cdrom) return { device: "cdrom", readonly: disk.cdrom.readonly ?? true };
  if (disk.lun) return { device: "lun", readonly: disk.lun.readonly ?? false };
  return { device: "disk", readonly: disk.disk?.readonly ?? false };
}

function diskElements(vmi: VirtualMachineInstance, ctx: DomainContext): XmlElement[] {
  const targets = diskTargets(vmi.spec);
  return (vmi.spec.domain.devices.disks ?? []).map((disk) => {
    const prepared = ctx.disks[disk.name];
    if (!prepared) throw new Error(`disk ${disk.name} has no prepared volume; the launcher found nothing to attach`);
    const { device, readonly } = targetType(disk);
    const bus = diskBus(disk);
    const dev = targets.get(disk.name) ?? "";
    return el(
      "disk",
      { type: prepared.type ?? "file", device },
      el("driver", {
        name: "qemu",
        type: prepared.format,
        cache: disk.cache ?? (device === "cdrom" ? undefined : "none"),
      }),
      el("source", prepared.type === "block" ? { dev: prepared.path } : { file: prepared.path }),
      // A CD-ROM drive can start with its tray open (KubeVirt's tray), its medium in it but unread until the guest
      // closes it.
      el("target", { dev, bus, ...(disk.cdrom?.tray !== undefined ? { tray: disk.cdrom.tray } : {}) }),
      (readonly ||
        prepared.readonly === true ||
        (prepared.readonly === "unlessSata" && !(device === "disk" && bus === "sata"))) &&
        el("readonly"),
      disk.serial !== undefined && el("serial", {}, disk.serial),
      disk.bootOrder !== undefined && el("boot", { order: disk.bootOrder }),
      el("alias", { name: `ua-${disk.name}` }),
    );
  });
}

/** The alias of an interface's device in the domain. */
const interfaceAlias = (name: string) => `ua-${name}`;

/**
 * A MAC address as libvirt parses it: colons only. KubeVirt takes hyphens too (Go's net.ParseMAC), and `virtctl create
 * clone --new-mac-address` can pass only hyphens through.
 */
const libvirtMac = (mac: string) => mac.replaceAll("-", ":").toLowerCase();

function interfaceElements(vmi: VirtualMachineInstance, ctx: DomainContext): XmlElement[] {
  return (vmi.spec.domain.devices.interfaces ?? []).map((iface) => {
    if (!iface.masquerade && !iface.bridge)
      throw new Error(`interface ${iface.name}: only the masquerade and bridge bindings are supported`);
    // Either binding: the tap that network-setup made on the pod's bridge (node-contract's pod-network.ts), which QEMU
    // opens as it is (managed="no": libvirt, without NET_ADMIN, changes nothing of it), at the pod interface's MTU.
    // Under the bridge binding the guest takes the pod interface's MAC unless it names its own.
    const mac = iface.macAddress ?? (iface.bridge ? ctx.podInterface?.mac : undefined);
    return el(
      "interface",
      { type: "ethernet" },
      mac !== undefined && el("mac", { address: libvirtMac(mac) }),
      el("target", { dev: PodNetworkLinks.tap, managed: "no" }),
      el("model", { type: iface.model ?? "virtio" }),
      ctx.podInterface !== undefined && el("mtu", { size: ctx.podInterface.mtu }),
      iface.bootOrder !== undefined && el("boot", { order: iface.bootOrder }),
      el("alias", { name: interfaceAlias(iface.name) }),
    );
  });
}

const MiB = 2 ** 20;

function memoryBytes(vmi: VirtualMachineInstance): number {
  const domain = vmi.spec.domain;
  const value = domain.memory?.guest ?? domain.resources?.requests?.memory ?? domain.resources?.limits?.memory;
  const bytes = value === undefined ? undefined : parseQuantity(value);
  if (bytes === undefined || bytes <= 0) throw new Error("the VMI has no guest memory: set spec.domain.memory.guest");
  return Math.floor(bytes);
}

/**
 * The CPU model as KubeVirt maps it: host-model unless set, host-passthrough, or a named QEMU model (e.g.
 * Skylake-Client) as a custom CPU. Emulation has no host CPU to copy: it offers everything QEMU can emulate instead.
 */
function cpuElement(
  model: string | undefined,
  domainType: DomainContext["domainType"],
  topology: Record<string, number>,
): XmlElement {
  const shape = el("topology", topology);
  if (model !== undefined && model !== "host-model" && model !== "host-passthrough") {
    return el(
      "cpu",
      { mode: "custom", match: "exact", check: "none" },
      el("model", { fallback: "allow" }, model),
      shape,
    );
  }
  if (domainType !== "kvm") return el("cpu", { mode: "maximum", migratable: "off" }, shape);
  return el("cpu", { mode: model ?? "host-model" }, shape);
}

/** How often the guest's balloon driver reports its memory, as KubeVirt's default (memBalloonStatsPeriod). */
const MEMORY_STATS_PERIOD_SECONDS = 10;

const state = (on: boolean) => ({ state: on ? "on" : "off" });
const isOn = (feature: { enabled?: boolean | undefined } | undefined) =>
  feature !== undefined && feature.enabled !== false;

/** The Hyper-V enlightenments, in libvirt's names, each on when listed (unless enabled: false). */
function hypervElement(hyperv: NonNullable<Features["hyperv"]>): XmlElement {
  const simple = (
    [
      "relaxed",
      "vapic",
      "vpindex",
      "runtime",
      "synic",
      "reset",
      "frequencies",
      "reenlightenment",
      "tlbflush",
      "ipi",
      "evmcs",
    ] as const
  )
    .filter((name) => hyperv[name] !== undefined)
    .map((name) => el(name, state(isOn(hyperv[name]))));
  const { spinlocks, synictimer, vendorid } = hyperv;
  return el(
    "hyperv",
    { mode: "custom" },
    ...simple,
    spinlocks &&
      el("spinlocks", {
        ...state(isOn(spinlocks)),
        ...(isOn(spinlocks) ? { retries: spinlocks.spinlocks ?? 4096 } : {}),
      }),
    synictimer &&
      el("stimer", state(isOn(synictimer)), synictimer.direct && el("direct", state(isOn(synictimer.direct)))),
    vendorid &&
      el("vendor_id", {
        ...state(isOn(vendorid)),
        ...(isOn(vendorid) && vendorid.vendorid !== undefined ? { value: vendorid.vendorid } : {}),
      }),
  );
}

/**
 * ACPI and the APIC unless turned off (KubeVirt's defaults), SMM when asked or for secure boot, and the rest when
 * listed; under emulation, QEMU's translation cache at `tbCacheMiB` (libvirt gives QEMU `-accel tcg,tb-size=`).
 */
function featuresElement(
  features: Features | undefined,
  secureBoot: boolean,
  tbCacheMiB: number | undefined,
): XmlElement {
  const on = (feature: { enabled?: boolean | undefined } | undefined) => feature?.enabled !== false;
  const apic = features?.apic;
  const smm = features?.smm;
  return el(
    "features",
    {},
    on(features?.acpi) && el("acpi"),
    on(apic) && el("apic", apic?.endOfInterrupt !== undefined ? { eoi: apic.endOfInterrupt ? "on" : "off" } : {}),
    features?.hyperv && hypervElement(features.hyperv),
    features?.pvspinlock && el("pvspinlock", state(isOn(features.pvspinlock))),
    features?.kvm?.hidden !== undefined && el("kvm", {}, el("hidden", { state: features.kvm.hidden ? "on" : "off" })),
    (secureBoot || smm !== undefined) && el("smm", state(secureBoot || isOn(smm))),
    tbCacheMiB !== undefined && el("tcg", {}, el("tb-cache", { unit: "MiB" }, String(tbCacheMiB))),
  );
}

/** UTC (with an offset) or a time zone, and the timers the spec lists. */
function clockElement(clock: Clock | undefined): XmlElement {
  const offset =
    clock?.timezone !== undefined
      ? { offset: "timezone", timezone: clock.timezone }
      : { offset: "utc", ...(clock?.utc?.offsetSeconds ? { adjustment: clock.utc.offsetSeconds } : {}) };
  const timers = clock?.timer ?? {};
  const timer = (
    name: string,
    t: { present?: boolean | undefined; tickPolicy?: string | undefined; track?: string | undefined } | undefined,
  ) =>
    t &&
    el("timer", {
      name,
      present: t.present === false ? "no" : "yes",
      ...(t.tickPolicy !== undefined ? { tickpolicy: t.tickPolicy } : {}),
      ...(t.track !== undefined ? { track: t.track } : {}),
    });
  return el(
    "clock",
    offset,
    timer("rtc", timers.rtc),
    timer("pit", timers.pit),
    timer("hpet", timers.hpet),
    timer("kvmclock", timers.kvm),
    timer("hypervclock", timers.hyperv),
  );
}

export function domainXml(vmi: VirtualMachineInstance, ctx: DomainContext): string {
  const { domain } = vmi.spec;
  const devices = domain.devices;
  const cpu = { sockets: domain.cpu?.sockets ?? 1, cores: domain.cpu?.cores ?? 1, threads: domain.cpu?.threads ?? 1 };
  const vcpus = cpu.sockets * cpu.cores * cpu.threads;
  const memory = memoryBytes(vmi);
  const disks = diskElements(vmi, ctx);
  const buses = new Set((devices.disks ?? []).map((d) => diskBus(d)));
  const graphics = devices.autoattachGraphicsDevice !== false;
  const serial = devices.autoattachSerialConsole !== false;
  const efi = domain.firmware?.bootloader?.efi;
  // Secure boot unless turned off (KubeVirt's default); it needs SMM, and OVMF with Microsoft's keys enrolled.
  const secureBoot = efi !== undefined && efi.secureBoot !== false;
  const onOff = (on: boolean) => (on ? "yes" : "no");
  const kernel = ctx.kernelBoot;
  const serialSource = el("source", { mode: "bind", path: ctx.serialSocket });

  const xml = el(
    "domain",
    { type: ctx.domainType },
    el("name", {}, domainName(vmi)),
    el("uuid", {}, ctx.uuid),
    el("memory", { unit: "b" }, String(memory)),
    el("currentMemory", { unit: "b" }, String(memory)),
    el("vcpu", { placement: "static" }, String(vcpus)),
    cpuElement(domain.cpu?.model, ctx.domainType, cpu),
    el(
      "os",
      efi ? { firmware: "efi" } : {},
      el("type", { arch: "x86_64", machine: domain.machine?.type ?? "q35" }, "hvm"),
      // libvirt picks the firmware by these features from QEMU's firmware descriptors (the ovmf package).
      efi &&
        el(
          "firmware",
          {},
          el("feature", { enabled: onOff(secureBoot), name: "enrolled-keys" }),
          el("feature", { enabled: onOff(secureBoot), name: "secure-boot" }),
        ),
      // Persistent EFI variables: a file on the VM's backend-storage claim, which libvirt fills from the firmware's
      // template once.
      efi && ctx.nvram !== undefined && el("nvram", {}, ctx.nvram),
      kernel?.kernel !== undefined && el("kernel", {}, kernel.kernel),
      kernel?.initrd !== undefined && el("initrd", {}, kernel.initrd),
      domain.firmware?.kernelBoot?.kernelArgs !== undefined && el("cmdline", {}, domain.firmware.kernelBoot.kernelArgs),
      el("smbios", { mode: "sysinfo" }),
    ),
    el(
      "sysinfo",
      { type: "smbios" },
      el(
        "system",
        {},
        el("entry", { name: "uuid" }, domain.firmware?.uuid ?? ctx.uuid),
        domain.firmware?.serial !== undefined && el("entry", { name: "serial" }, domain.firmware.serial),
      ),
    ),
    // libvirt takes TCG's settings for an emulated domain only.
    featuresElement(domain.features, secureBoot, ctx.domainType === "qemu" ? tbCacheBytes(memory) / MiB : undefined),
    clockElement(domain.clock),
    el("on_poweroff", {}, "destroy"),
    el("on_reboot", {}, "restart"),
    el("on_crash", {}, "destroy"),
    el(
      "devices",
      {},
      buses.has("scsi") && el("controller", { type: "scsi", index: 0, model: "virtio-scsi" }),
      (buses.has("usb") || graphics || (devices.inputs ?? []).some((i) => (i.bus ?? "usb") === "usb")) &&
        el("controller", { type: "usb", index: 0, model: "qemu-xhci" }),
      ...disks,
      ...interfaceElements(vmi, ctx),
      serial &&
        el(
          "serial",
          { type: "unix" },
          serialSource,
          el("target", { port: 0 }),
          ctx.serialLog !== undefined && keepsSerialLog(vmi.spec) && el("log", { file: ctx.serialLog, append: "on" }),
        ),
      serial && el("console", { type: "unix" }, serialSource, el("target", { type: "serial", port: 0 })),
      graphics && el("graphics", { type: "vnc" }, el("listen", { type: "socket", socket: ctx.vncSocket })),
      graphics && el("video", {}, el("model", { type: "vga", vram: 16384, heads: 1 })),
      // The inputs listed, or a USB tablet with the display so that the VNC pointer follows the mouse.
      ...(devices.inputs ?? (graphics ? [{ type: "tablet", bus: "usb" as const }] : [])).map((i) =>
        el("input", { type: i.type, bus: i.bus ?? "usb" }),
      ),
      devices.watchdog?.i6300esb &&
        el("watchdog", { model: "i6300esb", action: devices.watchdog.i6300esb.action ?? "reset" }),
      // An emulated TPM 2.0 (swtpm, started by libvirt as the launcher's user), on the TIS interface as KubeVirt gives
      // it; a persistent one on CRB, as KubeVirt's, its state kept when the domain goes (on the claim: see
      // storage/vm-state.ts).
      devices.tpm !== undefined &&
        devices.tpm.enabled !== false &&
        (hasPersistentTpm(vmi.spec)
          ? el(
              "tpm",
              { model: "tpm-crb" },
              el("backend", { type: "emulator", version: "2.0", persistent_state: "yes" }),
            )
          : el("tpm", { model: "tpm-tis" }, el("backend", { type: "emulator", version: "2.0" }))),
      devices.rng !== undefined && el("rng", { model: "virtio" }, el("backend", { model: "random" }, "/dev/urandom")),
      // The QEMU guest agent's port, as KubeVirt adds it: guests that run the agent report their OS.
      el(
        "channel",
        { type: "unix" },
        el("source", { mode: "bind", path: ctx.guestAgentSocket }),
        el("target", { type: "virtio", name: "org.qemu.guest_agent.0" }),
      ),
      // A balloon, as KubeVirt attaches one unless told not to: the guest's driver reports its memory every 10 s
      // (domstats' balloon.*).
      devices.autoattachMemBalloon === false
        ? el("memballoon", { model: "none" })
        : el("memballoon", { model: "virtio" }, el("stats", { period: MEMORY_STATS_PERIOD_SECONDS })),
    ),
  );
  return `${renderXml(xml)}\n`;
}
