import type { V1Pod } from "@kubernetes/client-node";
import { core, custom } from "../../cluster/cluster.ts";
import { VmiPhases, createNamespace, deleteNamespace, serverSeconds, waitFor } from "../cluster.ts";
import { plainPod, podReadySeconds } from "../plain-pod.ts";
import { clusterCpu, clusterSecondsBetween, machineBusySeconds, machineRestRate } from "../proc.ts";
import { type Row, distribution } from "../results.ts";
import { type Summary, ratio, summarize } from "../stats.ts";
import { blankDiskImage, createVmi, minimalVmi } from "../workload.ts";

// What a VMI costs against a plain pod of its own shape, in one run: N minimal
// VMIs created at once and timed to Running, their namespace deleted, then N
// plain pods of the shape of one of their launcher pods (read from the cluster:
// plain-pod.ts) created at once and timed to Ready; each batch with the
// machine's CPU over its window. The local cluster's nodes are this machine.

const LAUNCHER = "kubevirt.io=virt-launcher";
/** Seconds of rest before each batch, to know what the machine spends when nothing starts. */
const REST_S = 10;

interface Batch {
  server: number[];
  watched: number[];
  /** CPU-seconds over the batch's window: the local cluster's pods and daemons, and the whole machine. */
  cluster: number;
  machine: number;
  windowS: number;
  restPerS: number;
}

type Create = (name: string) => Promise<unknown>;

/** Creates `count` at once, each named, and waits until all have shown the final phase; throws when not all do. */
async function batch(namespace: string, kind: "vmis" | "pods", count: number, create: Create) {
  const final = kind === "vmis" ? "Running" : "Ready";
  const deadlineS = 120 + 10 * count;
  const restPerS = await machineRestRate(REST_S);
  const watch = await VmiPhases.start(namespace, kind);
  try {
    const sent = new Map<string, number>();
    // The cluster's window inside the machine's (its reading takes a while): it can never count more.
    const machine0 = await machineBusySeconds();
    const cluster0 = await clusterCpu();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const name = `${kind === "vmis" ? "vmi" : "pod"}-${String(i).padStart(3, "0")}`;
        sent.set(name, performance.now());
        await create(name);
      }),
    );
    const done = await waitFor(() => watch.count([final, "Succeeded", "Failed"]) >= count, deadlineS * 1000, 100);
    const cluster = clusterSecondsBetween(cluster0, await clusterCpu());
    const machine = (await machineBusySeconds()) - machine0;
    const windowS = (performance.now() - t0) / 1000;
    if (!done) {
      const reached = String(watch.count([final]));
      throw new Error(`${reached} of ${String(count)} ${kind} ${final} within ${String(deadlineS)} s`);
    }
    const watched = [...sent].flatMap(([name, at]) => {
      const seen = watch.seen.get(name)?.get(final);
      return seen === undefined ? [] : [(seen - at) / 1000];
    });
    return { watched, cluster, machine, windowS, restPerS };
  } finally {
    watch.stop();
  }
}

const times = (id: string, figure: string, samples: number[], method: string): Row => ({
  id,
  figure,
  unit: "s",
  values: samples.length > 0 ? distribution(summarize(samples)) : { p50: null, p95: null, max: null },
  method,
});

function ratioRow(id: string, figure: string, vmi: Summary | undefined, pod: Summary | undefined, method: string): Row {
  const p50 = vmi && pod ? ratio(vmi.p50, pod.p50) : null;
  const p95 = vmi && pod ? ratio(vmi.p95, pod.p95) : null;
  const none = p50 === null || p95 === null;
  const note = none ? { note: "a pod time of 0 s has no ratio" } : {};
  return { id, figure, unit: "×", values: { p50, p95 }, method, ...note };
}

const cpuRow = (id: string, figure: string, b: Batch, count: number): Row => ({
  id,
  figure,
  unit: "CPU-s",
  values: { cluster: b.cluster / count, machine: b.machine / count },
  method:
    `from the first create until all ${String(count)} were seen (${b.windowS.toFixed(1)} s), ÷ ${String(count)}; ` +
    "cluster: cpuacct of both nodes' kubepods cgroups + the local cluster's daemons (etcd, kube-*, kubelet, " +
    "containerd and its shims, with their reaped children) from /proc; machine: /proc/stat busy ticks of this " +
    "machine (user, nice, system, irq, softirq, steal), other work on it included: it was busy " +
    `${b.restPerS.toFixed(2)} CPU-s/s in the ${String(REST_S)} s before`,
});

interface Listed {
  items: Parameters<typeof serverSeconds>[0][];
}

/** N minimal VMIs at once, then N plain pods of their launcher pod's shape at once: the batches and the shape. */
async function batches(count: number): Promise<{ vmis: Batch; pods: Batch; pattern: V1Pod }> {
  // The VMIs first; one of their launcher pods is the plain pods' pattern.
  const vmiNamespace = await createNamespace(`ratio-vmi-${String(count)}`);
  let vmis: Batch;
  let pattern: V1Pod | undefined;
  try {
    const image = blankDiskImage();
    const make = (name: string) => createVmi(vmiNamespace, minimalVmi(name, vmiNamespace, image));
    const run = await batch(vmiNamespace, "vmis", count, make);
    const where = { group: "kubevirt.io", version: "v1", namespace: vmiNamespace, plural: "virtualmachineinstances" };
    const list = (await custom.listNamespacedCustomObject(where)) as Listed;
    vmis = { ...run, server: list.items.map((v) => serverSeconds(v, "Running")).filter((s) => s !== undefined) };
    pattern = (await core.listNamespacedPod({ namespace: vmiNamespace, labelSelector: LAUNCHER })).items[0];
    if (!pattern) throw new Error(`no launcher pod in ${vmiNamespace} with its VMIs Running`);
  } finally {
    await deleteNamespace(vmiNamespace).catch(() => undefined);
  }
  const podNamespace = await createNamespace(`ratio-pod-${String(count)}`);
  try {
    const template = pattern;
    const make = (name: string) =>
      core.createNamespacedPod({ namespace: podNamespace, body: plainPod(template, name, podNamespace) });
    const run = await batch(podNamespace, "pods", count, make);
    const list = (await core.listNamespacedPod({ namespace: podNamespace })).items;
    return { vmis, pattern, pods: { ...run, server: list.map(podReadySeconds).filter((s) => s !== undefined) } };
  } finally {
    await deleteNamespace(podNamespace).catch(() => undefined);
  }
}

export async function ratioFigures(count: number): Promise<Row[]> {
  const { vmis, pods, pattern } = await batches(count);
  const label = `${String(count)} at once`;
  const containers = [...(pattern.spec?.initContainers ?? []), ...(pattern.spec?.containers ?? [])];
  const shape = `the launcher pod's containers: ${containers.map((c) => c.name).join(", ")}`;
  const summary = (s: number[]) => (s.length > 0 ? summarize(s) : undefined);
  const id = `ratio.${String(count)}`;
  const server = "server clocks, 1 s resolution";
  return [
    times(
      `${id}.vmi.running`,
      `${label}: minimal VMI, create → Running`,
      vmis.server,
      `VMI creationTimestamp → its Running phaseTransitionTimestamp (${server})`,
    ),
    times(
      `${id}.pod.running`,
      `${label}: plain pod of the launcher pod's shape, create → Ready`,
      pods.server,
      `pod creationTimestamp → its Ready condition's lastTransitionTime (${server}); ` +
        `true/sleep in the launcher's image, in ${shape}`,
    ),
    ratioRow(
      `${id}.start`,
      `${label}: VMI start ÷ pod start`,
      summary(vmis.server),
      summary(pods.server),
      `the rows above: p50 ÷ p50, p95 ÷ p95 (${server})`,
    ),
    ratioRow(
      `${id}.start.watched`,
      `${label}: VMI start ÷ pod start, watched`,
      summary(vmis.watched),
      summary(pods.watched),
      "create request sent → first watch event Running (VMI) or Ready (pod), client clock in ms: " +
        "p50 ÷ p50, p95 ÷ p95",
    ),
    cpuRow(`${id}.vmi.cpu`, `${label}: CPU per VMI start`, vmis, count),
    cpuRow(`${id}.pod.cpu`, `${label}: CPU per plain pod start`, pods, count),
    {
      id: `${id}.cpu`,
      figure: `${label}: CPU per VMI start ÷ per pod start`,
      unit: "×",
      values: { cluster: ratio(vmis.cluster, pods.cluster), machine: ratio(vmis.machine, pods.machine) },
      method: "the two rows above",
    },
  ];
}
