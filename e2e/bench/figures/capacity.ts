import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { parseQuantity } from "@kubevirt-ts/kubevirt-api";
import { core } from "../../cluster/cluster.ts";
import { VmiPhases, createNamespace, deleteNamespace, podRss, waitFor } from "../cluster.ts";
import { podRequest } from "../proc.ts";
import type { Row } from "../results.ts";
import { createVmi, tinyVmi } from "../workload.ts";

// How many tiny VMs a node holds: one tiny VMI's launcher pod's requests
// against its node's allocatable CPU, memory and pods, less what the pods
// already there request (the scheduler's sum); and how many of its measured
// RSS fit in this machine's available memory. Both local nodes are this one
// machine and each reports all of it, so the cluster holds less than the sum.

const MiB = 2 ** 20;
/** Seconds after the VMI is Running before its memory is read: the guest boots to its shell. */
const SETTLE_S = 30;

export async function capacityFigures(): Promise<Row[]> {
  const namespace = await createNamespace("capacity");
  const watch = await VmiPhases.start(namespace);
  try {
    await createVmi(namespace, tinyVmi("tiny", namespace));
    const running = await waitFor(() => watch.count(["Running"]) >= 1, 300_000);
    if (!running) throw new Error("the tiny VMI is not Running after 300 s");
    const [pod] = (await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" })).items;
    const nodeName = pod?.spec?.nodeName;
    if (!pod?.spec || !nodeName) throw new Error(`no scheduled launcher pod in ${namespace}`);
    const node = await core.readNode({ name: nodeName });
    const allocatable = node.status?.allocatable ?? {};
    const others = (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })).items.filter(
      (p) => p.metadata?.uid !== pod.metadata?.uid && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed",
    );
    const need = { cpu: podRequest(pod.spec, "cpu"), memory: podRequest(pod.spec, "memory") };
    const requested = (resource: "cpu" | "memory") =>
      others.reduce((s, p) => s + (p.spec ? podRequest(p.spec, resource) : 0), 0);
    const free = (resource: "cpu" | "memory") =>
      (parseQuantity(allocatable[resource] ?? "0") ?? 0) - requested(resource);
    const fits = {
      cpu: need.cpu > 0 ? Math.floor(free("cpu") / need.cpu) : null,
      memory: need.memory > 0 ? Math.floor(free("memory") / need.memory) : null,
      pods: Number(allocatable.pods ?? "0") - others.length,
    };
    const bound = Math.min(...[fits.cpu, fits.memory, fits.pods].filter((v): v is number => v !== null));
    await sleep(SETTLE_S * 1000);
    const rss = (await podRss(pod.metadata?.uid ?? "")).total;
    const meminfo = await readFile("/proc/meminfo", "utf8");
    const available = Number(/^MemAvailable:\s+(\d+) kB/m.exec(meminfo)?.[1] ?? "0") * 1024;
    const requests = `${String(Math.round(need.cpu * 1000))}m CPU, ${(need.memory / MiB).toFixed(0)} MiB`;
    return [
      {
        id: "capacity.tiny.node",
        figure: `tiny VMs a node holds by the scheduler's count (one launcher pod requests ${requests})`,
        unit: "VMs",
        values: { fits: bound, cpu: fits.cpu, memory: fits.memory, pods: fits.pods },
        method:
          `${nodeName}'s allocatable CPU, memory and pods, less the requests of the ${String(others.length)} ` +
          "other pods on it (each pod's as the scheduler counts it), ÷ one tiny VMI's launcher pod's; " +
          "fits: the least of the three",
      },
      {
        id: "capacity.tiny.machine-memory",
        figure: "tiny VMs this machine's memory holds at their measured RSS",
        unit: "VMs",
        values: { value: rss > 0 ? 1 + Math.floor(available / rss) : null },
        method:
          `1 + MemAvailable (/proc/meminfo, ${(available / MiB).toFixed(0)} MiB) ÷ the running tiny VM's ` +
          `launcher pod RSS (${(rss / MiB).toFixed(0)} MiB), ${String(SETTLE_S)} s after it was Running; ` +
          "both local nodes share this machine",
      },
    ];
  } finally {
    watch.stop();
    await deleteNamespace(namespace).catch(() => undefined);
  }
}
