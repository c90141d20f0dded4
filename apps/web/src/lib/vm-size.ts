import { type VirtualMachine, type VirtualMachineInstance, parseQuantity } from "@kubevirt-ts/kubevirt-api";

// A VM's size as its list shows it: vCPUs and memory of its running
// instance (instancetype and preference already applied), or else of its
// template; a VM sized by an instancetype it is not running with shows the
// instancetype's name, since its figures are in that object.

export interface VmSize {
  /** vCPUs, or the instancetype's name. */
  cpu: string;
  memory: string;
  /** For sorting: vCPUs and bytes, -1 when not known here. */
  cpuCount: number;
  memoryBytes: number;
}

export function vmSize(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): VmSize {
  const domain = vmi?.spec.domain ?? vm.spec.template.spec.domain;
  if (!vmi && vm.spec.instancetype)
    return { cpu: vm.spec.instancetype.name, memory: vm.spec.instancetype.name, cpuCount: -1, memoryBytes: -1 };
  const cpuCount = (domain.cpu?.sockets ?? 1) * (domain.cpu?.cores ?? 1) * (domain.cpu?.threads ?? 1);
  const memory = domain.memory?.guest ?? domain.resources?.requests?.memory;
  return {
    cpu: String(cpuCount),
    memory: memory === undefined ? "—" : String(memory),
    cpuCount,
    memoryBytes: memory === undefined ? -1 : (parseQuantity(String(memory)) ?? -1),
  };
}

export type SortKey = "name" | "namespace" | "status" | "node" | "cpu" | "memory" | "age";

/** Compares two rows by a column; ties fall back to the name, so the order is stable. */
export function compareRows(
  key: SortKey,
  a: { name: string; namespace: string; status: string; node: string; size: VmSize; created: string },
  b: typeof a,
): number {
  const by = (): number => {
    switch (key) {
      case "cpu":
        return a.size.cpuCount - b.size.cpuCount;
      case "memory":
        return a.size.memoryBytes - b.size.memoryBytes;
      // Older first reads as "age ascending": the youngest VM is the smallest age.
      case "age":
        return b.created.localeCompare(a.created);
      case "name":
        return 0;
      default:
        return a[key].localeCompare(b[key]);
    }
  };
  return by() || a.name.localeCompare(b.name) || a.namespace.localeCompare(b.namespace);
}

/** Whether a VM matches the search: a word of its name, or key=value / key of its labels. */
export function matchesSearch(vm: Pick<VirtualMachine, "metadata">, search: string): boolean {
  const terms = search.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const name = (vm.metadata.name ?? "").toLowerCase();
  const labels = Object.entries(vm.metadata.labels ?? {}).map(([k, v]) => [k.toLowerCase(), v.toLowerCase()] as const);
  return terms.every((term) => {
    const eq = term.indexOf("=");
    if (eq > 0) {
      const [key, value] = [term.slice(0, eq), term.slice(eq + 1)];
      return labels.some(([k, v]) => k === key && v === value);
    }
    return name.includes(term) || labels.some(([k, v]) => k === term || v.includes(term));
  });
}
