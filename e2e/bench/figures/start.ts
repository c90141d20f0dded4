import { core, custom } from "../../cluster/cluster.ts";
import {
  VmiPhases,
  componentPods,
  controllerLeader,
  createNamespace,
  deleteNamespace,
  podRss,
  serverSeconds,
  waitFor,
  writeCounters,
  writesSince,
} from "../cluster.ts";
import { type Row, distribution } from "../results.ts";
import { summarize } from "../stats.ts";
import { MINIMAL_GUEST_MEMORY, blankDiskImage, createVmi, minimalVmi } from "../workload.ts";
import { writeRows } from "./writes.ts";

// N minimal VMIs created at once: create → Scheduled and create → Running by
// the server's timestamps (1 s resolution) and as a watch saw them (ms), the
// writes they cost, and, with the VMIs running, the memory of their launcher
// pods and of the handler and controller; then the namespace is deleted and
// timed until gone.

const MiB = 2 ** 20;
const LAUNCHER = "kubevirt.io=virt-launcher";

function timing(id: string, figure: string, samples: number[], count: number, method: string, deadlineS: number): Row {
  const note =
    samples.length < count ? `${String(samples.length)} of ${String(count)} within ${String(deadlineS)} s` : undefined;
  return {
    id,
    figure,
    unit: "s",
    values: samples.length > 0 ? distribution(summarize(samples)) : { p50: null, p95: null, max: null },
    method,
    ...(note ? { note } : {}),
  };
}

async function memoryRows(namespace: string): Promise<Row[]> {
  const pods = (await core.listNamespacedPod({ namespace, labelSelector: LAUNCHER })).items;
  const usage = await Promise.all(pods.map((p) => podRss(p.metadata?.uid ?? "")));
  const rss = usage.map((u) => u.total / MiB).filter((v) => v > 0);
  const qemu = usage.map(
    (u) => [...u.byCommand].filter(([c]) => c.startsWith("qemu")).reduce((s, [, v]) => s + v, 0) / MiB,
  );
  const rows: Row[] = [];
  const method =
    "sum of VmRSS of the processes on this node whose cgroup is the pod's (by pod uid), " +
    "from /proc; shared pages count in each process";
  if (rss.length > 0) {
    rows.push({
      id: "memory.launcher.rss",
      figure: "launcher pod RSS (64Mi guest)",
      unit: "MiB",
      values: distribution(summarize(rss)),
      method,
    });
    rows.push({
      id: "memory.launcher.overhead",
      figure: "launcher pod overhead: RSS minus guest memory",
      unit: "MiB",
      values: distribution(summarize(rss.map((v) => v - MINIMAL_GUEST_MEMORY / MiB))),
      method: `${method}; minus the 64 MiB of guest memory (negative when the guest has not touched its memory)`,
    });
    rows.push({
      id: "memory.launcher.non-qemu",
      figure: "launcher pod RSS outside QEMU (tini, launcher, libvirt, virtlogd)",
      unit: "MiB",
      values: distribution(summarize(rss.map((v, i) => v - (qemu[i] ?? 0)))),
      method,
    });
  }
  const [handler] = await componentPods("handler");
  const leader = await controllerLeader();
  rows.push({
    id: "memory.handler.rss",
    figure: `handler RSS with ${String(pods.length)} VMIs running`,
    unit: "MiB",
    values: { value: (await podRss(handler?.metadata?.uid ?? "")).total / MiB },
    method,
  });
  rows.push({
    id: "memory.controller.rss",
    figure: `controller (leader) RSS with ${String(pods.length)} VMIs running`,
    unit: "MiB",
    values: { value: (await podRss(leader.metadata?.uid ?? "")).total / MiB },
    method,
  });
  return rows;
}

export async function startFigures(count: number, options: { memory: boolean }): Promise<Row[]> {
  const namespace = await createNamespace(`start-${String(count)}`);
  const image = blankDiskImage();
  const deadlineS = 120 + 10 * count;
  const watch = await VmiPhases.start(namespace);
  try {
    const before = await writeCounters();
    const sent = new Map<string, number>();
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const name = `vmi-${String(i).padStart(3, "0")}`;
        sent.set(name, performance.now());
        await createVmi(namespace, minimalVmi(name, namespace, image));
      }),
    );
    await waitFor(() => watch.count(["Running", "Succeeded", "Failed"]) >= count, deadlineS * 1000, 250);
    const after = await writeCounters();
    const vmis = (await custom.listNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachineinstances",
    })) as { items: Parameters<typeof serverSeconds>[0][] };
    const server = (phase: string) =>
      vmis.items.map((v) => serverSeconds(v, phase)).filter((s): s is number => s !== undefined);
    const client = (phase: string) =>
      [...sent].flatMap(([name, t0]) => {
        const seen = watch.seen.get(name)?.get(phase);
        return seen === undefined ? [] : [(seen - t0) / 1000];
      });
    const label = `${String(count)} minimal VMI${count > 1 ? "s" : ""} at once`;
    const serverMethod = "VMI creationTimestamp → status.phaseTransitionTimestamps (server clocks, 1 s resolution)";
    const restarts =
      watch.restarts > 0
        ? `; the watch ended and was started again ${String(watch.restarts)} time(s), ` +
          "a phase reached meanwhile seen late"
        : "";
    const clientMethod = `create request sent → first watch event in that phase (client clock, ms)${restarts}`;
    const rows: Row[] = [
      timing(
        `start.${String(count)}.scheduled`,
        `${label}: create → Scheduled`,
        server("Scheduled"),
        count,
        serverMethod,
        deadlineS,
      ),
      timing(
        `start.${String(count)}.running`,
        `${label}: create → Running`,
        server("Running"),
        count,
        serverMethod,
        deadlineS,
      ),
      timing(
        `start.${String(count)}.scheduled.client`,
        `${label}: create → Scheduled, watched`,
        client("Scheduled"),
        count,
        clientMethod,
        deadlineS,
      ),
      timing(
        `start.${String(count)}.running.client`,
        `${label}: create → Running, watched`,
        client("Running"),
        count,
        clientMethod,
        deadlineS,
      ),
      ...writeRows(`start.${String(count)}`, label, writesSince(before, after), count),
    ];
    if (options.memory) rows.push(...(await memoryRows(namespace)));
    watch.stop();
    const goneMs = await deleteNamespace(namespace);
    rows.push({
      id: `delete.${String(count)}`,
      figure: `deleting ${String(count)} running VMIs: namespace delete → gone`,
      unit: "s",
      values: { value: goneMs / 1000 },
      method: "DELETE namespace → namespace read answers 404 (polled every 250 ms); terminationGracePeriodSeconds 5",
    });
    return rows;
  } finally {
    watch.stop();
    await deleteNamespace(namespace).catch(() => undefined);
  }
}
