import { parseQuantity, type Quantity, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";

// How much memory a launcher pod uses besides its guest's RAM, for the
// controller's memory request and the launcher's domain alike. With KVM it is
// KubeVirt's estimate (its GetMemoryOverhead); under QEMU's software emulation
// it is what a kubevirt-ts launcher was measured to use
// (services/launcher/test/memory.integration.test.ts) plus QEMU's translation
// cache, whose size the launcher gives QEMU (tbCacheBytes).

const MiB = 2 ** 20;

/**
 * KubeVirt's fixed share, the `ps` RSS of its processes: virt-launcher-monitor 25 MiB, virt-launcher 100, virtlogd 25,
 * virtqemud 40, QEMU without its guest's RAM 30.
 */
const KUBEVIRT_PROCESSES_BYTES = 220 * MiB;

/**
 * A kubevirt-ts launcher's own share under emulation, the bound its memory test holds it to: the resident memory of
 * Node, libvirtd, virtlogd, virsh and QEMU, less the guest's RAM and QEMU's translation cache, each file's pages
 * once, as the pod's cgroup is charged for them (measured 167 MiB with a 256 MiB guest just booted; 225 MiB when each
 * process counts the libraries it shares, as `ps` does).
 */
export const LAUNCHER_OWN_MEMORY_BYTES = 180 * MiB;

/** KubeVirt's per-vCPU share, its share for an IO thread, and its video RAM when a display is attached. */
const PER_VCPU_BYTES = 8 * MiB;
const IO_THREAD_BYTES = 8 * MiB;
const VIDEO_BYTES = 32 * MiB;
/** swtpm, for an emulated TPM (KubeVirt's figure). */
const TPM_BYTES = 53 * MiB;
/** KubeVirt's room for its exec probe helper: once, and per exec probe. */
const EXEC_PROBES_BYTES = 100 * MiB;
const PER_EXEC_PROBE_BYTES = 10 * MiB;
/** KubeVirt's extra for a VMI whose requests equal its limits (Guaranteed QoS). */
const GUARANTEED_BYTES = 100 * MiB;

/** QEMU's translation cache under emulation: an eighth of the guest's memory, within these bounds (whole MiB). */
const TB_CACHE_MIN_BYTES = 64 * MiB;
const TB_CACHE_MAX_BYTES = 256 * MiB;

/**
 * The size of QEMU's translation cache (libvirt's `<tcg><tb-cache>`) for an emulated guest of `guestBytes`. QEMU's own
 * default is 1 GiB on a 64-bit host, resident once the guest has run that much code: a 1 GiB Debian guest's boot left
 * 562 MiB of it resident. An eighth of the guest, within 64 and 256 MiB: that boot took 57.7 s of QEMU's CPU with
 * 128 MiB, 56.5 s with 1 GiB and 63.5 s with 64 MiB (the tiny guest's boot fits in 46 MiB).
 */
export function tbCacheBytes(guestBytes: number): number {
  const eighth = Math.ceil(guestBytes / 8 / MiB) * MiB;
  return Math.min(TB_CACHE_MAX_BYTES, Math.max(TB_CACHE_MIN_BYTES, eighth));
}

const bytesOf = (value: Quantity | undefined) => (value === undefined ? undefined : parseQuantity(value));

/** The guest's vCPUs as KubeVirt counts them: its topology, else its CPU limit or request, at least 1. */
export function guestVcpus(vmi: VirtualMachineInstance): number {
  const { cpu, resources } = vmi.spec.domain;
  const count = cpu
    ? (cpu.sockets ?? 1) * (cpu.cores ?? 1) * (cpu.threads ?? 1)
    : Math.ceil(bytesOf(resources?.limits?.cpu) ?? bytesOf(resources?.requests?.cpu) ?? 1);
  return Math.max(1, count);
}

/** Bytes of guest memory: memory.guest, else the memory request, else the limit. */
export function guestMemoryBytes(vmi: VirtualMachineInstance): number {
  const domain = vmi.spec.domain;
  return bytesOf(domain.memory?.guest ?? domain.resources?.requests?.memory ?? domain.resources?.limits?.memory) ?? 0;
}

/** KubeVirt's Guaranteed QoS: memory and CPU both requested, each equal to its limit. */
function wantsGuaranteed(vmi: VirtualMachineInstance): boolean {
  const { requests, limits } = vmi.spec.domain.resources ?? {};
  const same = (name: "memory" | "cpu") => {
    const request = bytesOf(requests?.[name]);
    return request !== undefined && request > 0 && request === bytesOf(limits?.[name]);
  };
  return same("memory") && same("cpu");
}

/**
 * The memory a launcher pod needs besides its guest's RAM. With KVM, KubeVirt's estimate: page tables (a bit for every
 * 512 bytes of the guest's memory request), its processes, 8 MiB per vCPU and one IO thread, video RAM, swtpm, its exec
 * probe helper, and 100 MiB more under Guaranteed QoS. Under emulation (`emulated`, where the KubeVirt CR allows it,
 * ADR 23) the same, with the launcher's measured share in place of KubeVirt's processes, plus QEMU's translation cache.
 */
export function memoryOverheadBytes(vmi: VirtualMachineInstance, emulated: boolean): number {
  const { domain, livenessProbe, readinessProbe } = vmi.spec;
  const requested = bytesOf(domain.resources?.requests?.memory) ?? guestMemoryBytes(vmi);
  const pageTables = Math.floor((Math.ceil(requested / 1000) * 1000) / 512);
  const execProbes = [livenessProbe, readinessProbe].filter((p) => p?.exec !== undefined).length;
  const tpm = domain.devices.tpm !== undefined && domain.devices.tpm.enabled !== false;
  return (
    pageTables +
    (emulated ? LAUNCHER_OWN_MEMORY_BYTES + tbCacheBytes(guestMemoryBytes(vmi)) : KUBEVIRT_PROCESSES_BYTES) +
    guestVcpus(vmi) * PER_VCPU_BYTES +
    IO_THREAD_BYTES +
    (domain.devices.autoattachGraphicsDevice !== false ? VIDEO_BYTES : 0) +
    (tpm ? TPM_BYTES : 0) +
    (execProbes > 0 ? EXEC_PROBES_BYTES + execProbes * PER_EXEC_PROBE_BYTES : 0) +
    (wantsGuaranteed(vmi) ? GUARANTEED_BYTES : 0)
  );
}
