import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import type { V1Pod } from "@kubernetes/client-node";
import { core } from "../../cluster/cluster.ts";
import { VmiPhases, componentPods, createNamespace, deleteNamespace, waitFor } from "../cluster.ts";
import {
  CLOCK_TICKS,
  clusterCpu,
  clusterSecondsBetween,
  podProcesses,
  podRequest,
  processResidency,
  samplePods,
  splitCpu,
  tbSizeBytes,
} from "../proc.ts";
import { type Row, distribution } from "../results.ts";
import { summarize } from "../stats.ts";
import { TINY_GUEST_MEMORY, createVmi, inParallel, tinyVmi } from "../workload.ts";

// What idle VMs cost: N tiny guests (the e2e suites' kernel and initrd booted
// to a shell) left running, then the CPU of the local cluster, of each launcher
// pod's processes and threads and of the handlers over a window
// (BENCH_IDLE_SECONDS), from /proc; and each launcher pod's memory by mapping.

const MiB = 2 ** 20;
const LAUNCHER = "kubevirt.io=virt-launcher";
/** Seconds after the last VMI is Running before the window opens: the guests finish booting to their shell. */
const SETTLE_S = 30;
/** Seconds of rest measured before the VMIs are created. */
const REST_S = 20;

const mibOf = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
const row = (id: string, figure: string, value: number, method: string): Row => ({
  id,
  figure,
  unit: "mCPU",
  values: { value },
  method,
});
const mcpu = (ticks: number, seconds: number, vms: number) => (ticks / CLOCK_TICKS / seconds / vms) * 1000;

async function memoryRows(id: string, pods: V1Pod[]): Promise<Row[]> {
  const processes = await podProcesses(pods.map((p) => p.metadata?.uid ?? ""));
  const perPod = await Promise.all(
    pods.map(async (pod) => {
      const pids = processes.get(pod.metadata?.uid ?? "") ?? [];
      const all = await Promise.all(pids.map((pid) => processResidency(pid, TINY_GUEST_MEMORY)));
      const qemu = pids.filter((_, i) => all[i]?.comm.startsWith("qemu"));
      const cmdline = (pid: number) => readFile(`/proc/${String(pid)}/cmdline`, "utf8").catch(() => "");
      const cmdlines = await Promise.all(qemu.map(cmdline));
      const inQemu = all.filter((p) => p.comm.startsWith("qemu"));
      return {
        name: pod.metadata?.name ?? "?",
        rss: all.reduce((s, p) => s + p.rss, 0),
        guest: inQemu.reduce((s, p) => s + p.guest, 0),
        tbCache: inQemu.reduce((s, p) => s + p.tbCache, 0),
        tbSize: cmdlines.map(tbSizeBytes).find((t) => t !== undefined),
        request: pod.spec ? podRequest(pod.spec, "memory") : 0,
      };
    }),
  );
  const mib = (f: (p: (typeof perPod)[number]) => number) => distribution(summarize(perPod.map((p) => f(p) / MiB)));
  const method =
    "smaps of the processes on this machine whose cgroup is the pod's (by uid); shared pages count in each process";
  const guestMiB = String(TINY_GUEST_MEMORY / MiB);
  const tbSize = perPod.find((p) => p.tbSize !== undefined)?.tbSize;
  const over = perPod.filter((p) => p.rss > p.request * 1.1);
  const overNote = (p: (typeof perPod)[number]) => `${p.name} ${mibOf(p.rss)} of ${mibOf(p.request)}`;
  return [
    {
      id: `${id}.memory.rss`,
      figure: `idle tiny VM (${guestMiB}Mi guest): launcher pod RSS`,
      unit: "MiB",
      values: mib((p) => p.rss),
      method,
    },
    {
      id: `${id}.memory.guest`,
      figure: "idle tiny VM: guest RAM resident",
      unit: "MiB",
      values: mib((p) => p.guest),
      method: `${method}; QEMU's mappings of exactly the guest's ${guestMiB} MiB`,
    },
    {
      id: `${id}.memory.tb-cache`,
      figure: "idle tiny VM: QEMU's translation cache resident",
      unit: "MiB",
      values: mib((p) => p.tbCache),
      method:
        `${method}; QEMU's writable and executable private mappings (rwxp), which are its translation cache; ` +
        (tbSize === undefined
          ? "no tb-size on QEMU's command line (QEMU's default: 1 GiB at most)"
          : `tb-size on QEMU's command line: ${String(tbSize / MiB)} MiB at most`),
    },
    {
      id: `${id}.memory.overhead`,
      figure: "idle tiny VM: launcher pod RSS less guest RAM and translation cache",
      unit: "MiB",
      values: mib((p) => p.rss - p.guest - p.tbCache),
      method: `${method}; the three rows above: RSS − guest RAM resident − translation cache resident`,
    },
    {
      id: `${id}.memory.over-request`,
      figure: "idle tiny VMs: launcher pods whose RSS exceeds their memory request by more than 10 %",
      unit: "pods",
      values: { value: over.length },
      method: `${method}; against the pod's memory request as the scheduler counts it, of ${String(perPod.length)}`,
      ...(over.length > 0 ? { note: over.map(overNote).join(", ") } : {}),
    },
  ];
}

export async function idleFigures(count: number, seconds: number): Promise<Row[]> {
  const namespace = await createNamespace(`idle-${String(count)}`);
  const watch = await VmiPhases.start(namespace);
  try {
    // What the cluster spends with none of these VMs: its pods and daemons over REST_S.
    const rest0 = await clusterCpu();
    const r0 = performance.now();
    await sleep(REST_S * 1000);
    const restPerS = clusterSecondsBetween(rest0, await clusterCpu()) / ((performance.now() - r0) / 1000);
    const names = Array.from({ length: count }, (_, i) => `tiny-${String(i).padStart(3, "0")}`);
    await inParallel(names, count, async (name) => {
      await createVmi(namespace, tinyVmi(name, namespace));
    });
    const deadlineS = 120 + 10 * count;
    if (!(await waitFor(() => watch.count(["Running"]) >= count, deadlineS * 1000, 500))) {
      const running = String(watch.count(["Running"]));
      throw new Error(`${running} of ${String(count)} tiny VMIs Running within ${String(deadlineS)} s`);
    }
    await sleep(SETTLE_S * 1000);
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: LAUNCHER })).items;
    const handlers = await componentPods("handler");
    const handlerUids = new Set(handlers.map((p) => p.metadata?.uid ?? ""));
    const uids = [...pods, ...handlers].map((p) => p.metadata?.uid ?? "");
    const before = await samplePods(uids);
    const cluster0 = await clusterCpu();
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const cluster = clusterSecondsBetween(cluster0, await clusterCpu());
    const windowS = (performance.now() - t0) / 1000;
    const split = splitCpu(before, await samplePods(uids), handlerUids);
    const id = `idle.${String(count)}`;
    const label = `${String(count)} idle tiny VMs`;
    const per = (ticks: number) => mcpu(ticks, windowS, count);
    const clusterPerVm = ((cluster - restPerS * windowS) / windowS / count) * 1000;
    const vcpu = per(split.vcpu);
    const launcher = [...split.launcher.values()].reduce((s, v) => s + v, 0);
    const ownNet = clusterPerVm - vcpu;
    const cpuMethod =
      `over ${windowS.toFixed(0)} s, ${String(SETTLE_S)} s after the last was Running: utime + stime from ` +
      "/proc/<pid>/stat " +
      "of the processes whose cgroup is a launcher pod's or a handler pod's, and /proc/<pid>/task/*/stat for QEMU's " +
      'vCPU threads ("CPU n/TCG" or "CPU n/KVM"); per VM: ÷ the VMs';
    const top = [...split.launcher].sort((a, b) => b[1] - a[1]);
    const rows: Row[] = [
      {
        id: `${id}.node.per-vm`,
        figure: `${label}: node CPU per idle VM, the guest's own vCPUs excluded`,
        unit: "mCPU",
        values: { value: ownNet, "with vCPUs": clusterPerVm },
        method:
          "the local cluster's CPU over the window (cpuacct of both nodes' kubepods cgroups + its daemons from " +
          "/proc: etcd, kube-*, kubelet, containerd and its shims), less its rate before the VMIs were made " +
          `(${restPerS.toFixed(2)} CPU-s/s over ${String(REST_S)} s) and less QEMU's ` +
          `vCPU threads, ÷ ${String(count)}, in CPU-ms per second`,
      },
      {
        ...row(`${id}.vcpu.per-vm`, `${label}: the guest's own vCPU threads per VM (emulated)`, vcpu, cpuMethod),
        // libvirt names QEMU's threads (debug-threads=on); without names the guest's CPU is in QEMU's other threads.
        ...(split.vcpu === 0 && split.qemu > 0 ? { note: "no QEMU thread named as a vCPU: see QEMU's others" } : {}),
      },
      row(`${id}.qemu.per-vm`, `${label}: QEMU's other threads per VM`, per(split.qemu), cpuMethod),
      {
        id: `${id}.launcher.per-vm`,
        figure: `${label}: launcher pod's processes besides QEMU per VM, by command`,
        unit: "mCPU",
        values: { all: per(launcher), ...Object.fromEntries(top.slice(0, 4).map(([comm, t]) => [comm, per(t)])) },
        method: cpuMethod,
      },
      row(`${id}.handler.per-vm`, `${label}: handler per VM`, per(split.handler), `${cpuMethod}; both nodes' handlers`),
      {
        id: `${id}.handler-launcher.per-vm`,
        figure: `${label}: per idle VM, handler + launcher (QEMU's vCPUs excluded)`,
        unit: "mCPU",
        values: { value: per(split.handler + launcher + split.qemu) },
        method: `${cpuMethod}; the handler, the launcher's processes and QEMU's non-vCPU threads`,
      },
      {
        id: `${id}.handler-launcher.share`,
        figure: `${label}: handler + launcher's share of the node's CPU per idle VM`,
        unit: "%",
        values: { value: ownNet > 0 ? (per(split.handler + launcher + split.qemu) / ownNet) * 100 : null },
        method: "the row above ÷ the node's CPU per idle VM, the guest's own vCPUs excluded",
      },
    ];
    rows.push(...(await memoryRows(id, pods)));
    return rows;
  } finally {
    watch.stop();
    await deleteNamespace(namespace).catch(() => undefined);
  }
}
