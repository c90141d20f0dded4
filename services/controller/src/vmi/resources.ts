// The launcher pod's resources besides its memory overhead (KubeVirt's or the
// launcher's measured one: memoryOverheadBytes in @kubevirt-ts/vm-rules).

import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";

const MiB = 2 ** 20;

export function vcpus(vmi: VirtualMachineInstance): number {
  const cpu = vmi.spec.domain.cpu;
  return (cpu?.sockets ?? 1) * (cpu?.cores ?? 1) * (cpu?.threads ?? 1);
}

/** A byte count as a quantity the API server keeps as it is, in whole MiB rounded up. */
export function toMebibytes(bytes: number): string {
  return `${Math.ceil(bytes / MiB)}Mi`;
}
