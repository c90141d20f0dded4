import { parseQuantity, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";

// How much memory the launcher pod asks for: the guest's memory plus what
// QEMU, libvirt and the launcher itself use around it.

const MiB = 2 ** 20;
/** Node, libvirtd, virtlogd and QEMU's own code and data outside guest RAM. */
export const BASE_OVERHEAD_BYTES = 180 * MiB;
const PER_VCPU_BYTES = 8 * MiB;
const VIDEO_BYTES = 16 * MiB;

export function vcpus(vmi: VirtualMachineInstance): number {
  const cpu = vmi.spec.domain.cpu;
  return (cpu?.sockets ?? 1) * (cpu?.cores ?? 1) * (cpu?.threads ?? 1);
}

/** Bytes of guest memory: memory.guest, else the memory request, else the limit. */
export function guestMemoryBytes(vmi: VirtualMachineInstance): number {
  const domain = vmi.spec.domain;
  const value = domain.memory?.guest ?? domain.resources?.requests?.memory ?? domain.resources?.limits?.memory;
  return value === undefined ? 0 : (parseQuantity(value) ?? 0);
}

/** QEMU's page tables and per-vCPU state grow with the guest: about 1% of its memory on top of the fixed part. */
export function memoryOverheadBytes(vmi: VirtualMachineInstance): number {
  const graphics = vmi.spec.domain.devices.autoattachGraphicsDevice !== false ? VIDEO_BYTES : 0;
  return BASE_OVERHEAD_BYTES + Math.ceil(guestMemoryBytes(vmi) / 100) + vcpus(vmi) * PER_VCPU_BYTES + graphics;
}

/** A byte count as a quantity the API server keeps as it is, in whole MiB rounded up. */
export function toMebibytes(bytes: number): string {
  return `${Math.ceil(bytes / MiB)}Mi`;
}
