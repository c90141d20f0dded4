import { qemuPodUids } from "@kubevirt-ts/local-cluster";
import { core, custom } from "../cluster/cluster.ts";

// What "converged" means for the chaos suite: the VMs are exactly the ones
// the test made and did not delete, each VM's VMI, launcher pod and QEMU
// process agree with its run strategy, and nothing is left over.

export type RunStrategy = "Always" | "Halted";

interface Owned {
  metadata?: {
    name?: string;
    uid?: string;
    deletionTimestamp?: unknown;
    ownerReferences?: { controller?: boolean; kind: string; uid: string; name: string }[];
  };
}
interface Vm extends Owned {
  spec?: { runStrategy?: string };
  status?: { printableStatus?: string };
}
interface Vmi extends Owned {
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

export interface Verdict {
  converged: boolean;
  /** VMs the test expects that are not there. */
  lost: string[];
  /** More than one VMI or live launcher pod for one VM. */
  duplicated: string[];
  /** Launcher pods, VMIs or QEMU processes that belong to nothing alive. */
  orphans: string[];
  /** What is not yet as the run strategy says, in words. */
  pending: string[];
}

const controllerUid = (o: Owned) => o.metadata?.ownerReferences?.find((r) => r.controller)?.uid;

async function listAll<T>(plural: "virtualmachines" | "virtualmachineinstances", namespace: string): Promise<T[]> {
  const list = (await custom.listNamespacedCustomObject({
    group: "kubevirt.io",
    version: "v1",
    namespace,
    plural,
  })) as { items: T[] };
  return list.items;
}

/** Looks once at the namespace's VMs, VMIs, launcher pods and the node's QEMU processes against the expected VMs. */
export async function judge(namespace: string, expected: ReadonlyMap<string, RunStrategy>): Promise<Verdict> {
  const [vms, vmis, pods, allPods, qemu] = await Promise.all([
    listAll<Vm>("virtualmachines", namespace),
    listAll<Vmi>("virtualmachineinstances", namespace),
    core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" }).then((l) => l.items),
    core.listPodForAllNamespaces({ labelSelector: "kubevirt.io=virt-launcher" }).then((l) => l.items),
    qemuPodUids(),
  ]);
  const verdict: Verdict = { converged: false, lost: [], duplicated: [], orphans: [], pending: [] };
  const vmByName = new Map(vms.map((vm) => [vm.metadata?.name ?? "", vm]));
  for (const name of expected.keys()) if (!vmByName.has(name)) verdict.lost.push(`VM ${name}`);
  for (const vm of vms)
    if (!expected.has(vm.metadata?.name ?? ""))
      verdict.pending.push(`VM ${vm.metadata?.name ?? ""} was deleted but is still there`);

  const vmUids = new Set(vms.map((vm) => vm.metadata?.uid));
  const vmiUids = new Set(vmis.map((vmi) => vmi.metadata?.uid));
  for (const vmi of vmis)
    if (!vmUids.has(controllerUid(vmi))) verdict.orphans.push(`VMI ${vmi.metadata?.name ?? ""} without its VM`);
  const livePods = pods.filter(
    (p) => !p.metadata?.deletionTimestamp && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed",
  );
  for (const pod of pods)
    if (!vmiUids.has(controllerUid(pod)))
      verdict.orphans.push(`launcher pod ${pod.metadata?.name ?? ""} without its VMI`);
  const launcherUids = new Set(allPods.filter((p) => p.status?.phase === "Running").map((p) => p.metadata?.uid));
  for (const uid of qemu)
    if (!launcherUids.has(uid)) verdict.orphans.push(`QEMU of pod ${uid}, which no running launcher pod is`);

  for (const [name, strategy] of expected) {
    const vm = vmByName.get(name);
    if (!vm) continue;
    const own = vmis.filter((vmi) => controllerUid(vmi) === vm.metadata?.uid);
    if (own.length > 1) verdict.duplicated.push(`${name}: ${String(own.length)} VMIs`);
    const vmi = own[0];
    if (strategy === "Halted") {
      if (vmi) verdict.pending.push(`${name} is Halted but has a VMI (${vmi.status?.phase ?? "no phase"})`);
      if (vm.status?.printableStatus !== "Stopped")
        verdict.pending.push(`${name} is Halted but shows ${vm.status?.printableStatus ?? "nothing"}`);
      continue;
    }
    if (!vmi) {
      verdict.pending.push(`${name} should run but has no VMI`);
      continue;
    }
    const vmiPods = livePods.filter((p) => controllerUid(p) === vmi.metadata?.uid);
    if (vmiPods.length > 1) verdict.duplicated.push(`${name}: ${String(vmiPods.length)} live launcher pods`);
    const ready = vmi.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
    if (vmi.status?.phase !== "Running" || !ready)
      verdict.pending.push(`${name}'s VMI is ${vmi.status?.phase ?? "new"}${ready ? "" : ", not Ready"}`);
    else if (!vmiPods.some((p) => qemu.includes(p.metadata?.uid ?? "")))
      verdict.pending.push(`${name}'s VMI says Running but no QEMU runs in its pod`);
    if (vm.status?.printableStatus !== "Running")
      verdict.pending.push(`${name} shows ${vm.status?.printableStatus ?? "nothing"}`);
  }
  verdict.converged =
    verdict.lost.length + verdict.duplicated.length + verdict.orphans.length + verdict.pending.length === 0;
  return verdict;
}
