import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { KUBECONFIG_PATH, LOCAL_DIR } from "@kubevirt-ts/local-cluster";
import { core, custom, undefinedIfNotFound } from "../../cluster/cluster.ts";
import {
  VmiPhases,
  componentMetrics,
  controllerLeader,
  createNamespace,
  deleteNamespace,
  podRss,
  restartController,
  waitFor,
  writeCounters,
  writesSince,
} from "../cluster.ts";
import { histogramQuantile, type Sample, sampleDelta } from "../prometheus.ts";
import type { Row } from "../results.ts";
import { blankDiskImage, createVmi, inParallel, minimalVmi } from "../workload.ts";
import { writeRows } from "./writes.ts";

// The controller at scale, as KubeVirt measures it: KWOK (built from its Go
// module by hack/build-kwok.sh) runs fake nodes against the local cluster;
// thousands of minimal VMIs are scheduled onto them. Only this benchmark's
// VMIs can land there: the fake nodes carry a taint that only they
// tolerate, and they select the fake nodes. Nodes, VMIs and KWOK go at the end.

const FAKE = "kubevirt-ts.io/bench-fake-node";
const KiB = 1024;

function fakeNode(name: string) {
  return {
    metadata: {
      name,
      labels: { [FAKE]: "true", type: "kwok" },
      annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
    },
    spec: { taints: [{ key: FAKE, value: "true", effect: "NoSchedule" }] },
    status: {
      allocatable: { cpu: "1000", memory: "1Ti", pods: "1000" },
      capacity: { cpu: "1000", memory: "1Ti", pods: "1000" },
    },
  };
}

function startKwok(dir: string): ChildProcess {
  const logDir = join(LOCAL_DIR, "bench");
  mkdirSync(logDir, { recursive: true });
  const log = openSync(join(logDir, "kwok.log"), "w");
  return spawn(
    join(dir, "kwok"),
    [
      `--kubeconfig=${KUBECONFIG_PATH}`,
      `--config=${join(dir, "stages.yaml")}`,
      `--manage-nodes-with-label-selector=${FAKE}=true`,
      // Addresses for the fake pods in the benchmarking range, clear of the node's and the real pods'.
      "--cidr=198.18.128.0/17",
      "--node-ip=198.18.254.1",
    ],
    { stdio: ["ignore", log, log] },
  );
}

interface Scrape {
  samples: Sample[];
  rss: number;
}

const heapUsed = (scrape: Scrape) =>
  scrape.samples.find((s) => s.name === "nodejs_heap_size_used_bytes")?.value ?? Number.NaN;

async function scrapeController(): Promise<Scrape> {
  const leader = await controllerLeader();
  const metrics = await componentMetrics("controller");
  return {
    samples: metrics.find((m) => m.pod === leader.metadata?.name)?.samples ?? [],
    rss: (await podRss(leader.metadata?.uid ?? "")).total,
  };
}

/** Removes what the benchmark made, whatever state it is in; says what it had to force. */
async function cleanUp(namespace: string, nodes: string[], kwok: ChildProcess | undefined): Promise<string[]> {
  const forced: string[] = [];
  try {
    await deleteNamespace(namespace, 900_000);
  } catch {
    // VMIs on nodes without a handler may keep their finalizer: take it off so the namespace can go.
    forced.push("finalizers removed from VMIs still there after 15 min");
    const list = (await custom.listNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachineinstances",
    })) as { items: { metadata: { name: string } }[] };
    await inParallel(list.items, 10, async (vmi) => {
      await custom
        .patchNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachineinstances",
          name: vmi.metadata.name,
          body: [{ op: "replace", path: "/metadata/finalizers", value: [] }],
        })
        .catch(undefinedIfNotFound);
    });
    await deleteNamespace(namespace, 300_000);
  }
  await inParallel(nodes, 10, async (name) => {
    await core.deleteNode({ name }).catch(undefinedIfNotFound);
  });
  kwok?.kill("SIGTERM");
  return forced;
}

export async function kwokFigures(
  kwokDir: string,
  options: { nodes: number; vmis: number; timeoutS: number },
): Promise<Row[]> {
  const namespace = await createNamespace("kwok");
  const nodes = Array.from({ length: options.nodes }, (_, i) => `bench-kwok-${String(i).padStart(3, "0")}`);
  let kwok: ChildProcess | undefined;
  const watch = await VmiPhases.start(namespace);
  try {
    kwok = startKwok(kwokDir);
    await inParallel(nodes, 10, async (name) => {
      await core.createNode({ body: fakeNode(name) });
    });
    const ready = await waitFor(
      async () => {
        const list = (await core.listNode({ labelSelector: `${FAKE}=true` })).items;
        return (
          list.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length ===
          nodes.length
        );
      },
      120_000,
      1_000,
    );
    if (!ready)
      throw new Error(
        `KWOK did not make the ${String(nodes.length)} fake nodes Ready within 120 s; see .local/bench/kwok.log`,
      );

    const image = blankDiskImage();
    const placement = {
      nodeSelector: { [FAKE]: "true" },
      tolerations: [{ key: FAKE, operator: "Exists", effect: "NoSchedule" }],
    };
    // A fresh controller, settled: its memory before holds nothing of an earlier run.
    await restartController();
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const before = await scrapeController();
    const writesBefore = await writeCounters();
    let peakRss = before.rss;
    const depths: number[] = [];
    const started = performance.now();
    const deadline = started + options.timeoutS * 1000;
    const sampling = { on: true };
    const sampler = (async () => {
      while (sampling.on) {
        const now = await scrapeController().catch(() => undefined);
        if (now) {
          peakRss = Math.max(peakRss, now.rss);
          depths.push(now.samples.filter((s) => s.name === "workqueue_depth").reduce((sum, s) => sum + s.value, 0));
        }
        await new Promise((resolve) => setTimeout(resolve, 5_000));
      }
    })();
    await inParallel(
      Array.from({ length: options.vmis }, (_, i) => i),
      16,
      async (i) => {
        if (performance.now() > deadline) return;
        await createVmi(namespace, minimalVmi(`vmi-${String(i).padStart(5, "0")}`, namespace, image, placement));
      },
    );
    const createdS = (performance.now() - started) / 1000;
    await waitFor(
      () => watch.count(["Scheduled", "Running"]) >= options.vmis,
      Math.max(0, deadline - performance.now()),
      1_000,
    );
    const scheduledS = (performance.now() - started) / 1000;
    const scheduled = watch.count(["Scheduled", "Running"]);
    // The controller settles (status writes after Scheduled) before its memory and counters are read.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    sampling.on = false;
    await sampler;
    const after = await scrapeController();
    const writes = writesSince(writesBefore, await writeCounters());
    const interval = sampleDelta(before.samples, after.samples);
    const queues = [
      ...new Set(
        interval.filter((s) => s.name === "workqueue_adds_total" && s.value > 0).map((s) => s.labels.name ?? ""),
      ),
    ];
    const latency = (metric: string) =>
      Object.fromEntries(
        queues.flatMap((q) =>
          [0.5, 0.95].map((quantile) => [
            `${q} p${String(quantile * 100)}`,
            (histogramQuantile(interval, metric, { name: q }, quantile) ?? Number.NaN) * 1000,
          ]),
        ),
      );
    const incomplete =
      scheduled < options.vmis
        ? { note: `${String(scheduled)} of ${String(options.vmis)} Scheduled within ${String(options.timeoutS)} s` }
        : {};
    const label = `KWOK, ${String(options.nodes)} fake nodes, ${String(options.vmis)} VMIs`;
    const method =
      `${label} (16 creates at a time, all sent in ${createdS.toFixed(0)} s); the controller ` +
      "leader's /metrics and its pod's RSS from /proc, sampled every 5 s";
    return [
      {
        id: "kwok.scheduled",
        figure: `${label}: first create → all Scheduled`,
        unit: "s",
        values: { value: scheduled >= options.vmis ? scheduledS : null },
        method: "first create sent → a watch on the namespace has seen every VMI Scheduled",
        ...incomplete,
      },
      {
        id: "kwok.controller-memory-per-vmi",
        figure: `${label}: controller memory per VMI (RSS after − before, ÷ VMIs)`,
        unit: "KiB",
        values: {
          value: (after.rss - before.rss) / KiB / Math.max(scheduled, 1),
          peak: (peakRss - before.rss) / KiB / Math.max(scheduled, 1),
        },
        method:
          `${method}; 'peak' uses the highest RSS seen; RSS ` +
          `before ${(before.rss / 2 ** 20).toFixed(0)} MiB, after ${(after.rss / 2 ** 20).toFixed(0)} ` +
          "MiB",
        ...incomplete,
      },
      {
        id: "kwok.controller-heap-per-vmi",
        figure: `${label}: controller JS heap used per VMI (after − before, ÷ VMIs)`,
        unit: "KiB",
        values: { value: (heapUsed(after) - heapUsed(before)) / KiB / Math.max(scheduled, 1) },
        method:
          `${method}; nodejs_heap_size_used_bytes of the leader, read 15 s after the last VMI was ` +
          "Scheduled (what its objects hold, without the heap's free space and the code); heap " +
          `before ${(heapUsed(before) / 2 ** 20).toFixed(0)} MiB, ` +
          `after ${(heapUsed(after) / 2 ** 20).toFixed(0)} MiB`,
        ...incomplete,
      },
      {
        id: "kwok.workqueue-depth",
        figure: `${label}: controller work-queue depth (all queues)`,
        unit: "keys",
        values: { max: depths.length > 0 ? Math.max(...depths) : null },
        method: `${method}; workqueue_depth summed over queues`,
      },
      {
        id: "kwok.workqueue-queue-latency",
        figure: `${label}: controller work-queue wait, by queue`,
        unit: "ms",
        values: latency("workqueue_queue_duration_seconds"),
        method: `${method}; workqueue_queue_duration_seconds over the run, histogram quantiles (bucket-interpolated)`,
      },
      {
        id: "kwok.workqueue-work-latency",
        figure: `${label}: controller work per key, by queue`,
        unit: "ms",
        values: latency("workqueue_work_duration_seconds"),
        method: `${method}; workqueue_work_duration_seconds over the run, histogram quantiles (bucket-interpolated)`,
      },
      ...writeRows("kwok", label, writes, Math.max(scheduled, 1)),
    ];
  } finally {
    watch.stop();
    const forced = await cleanUp(namespace, nodes, kwok);
    if (forced.length > 0) console.error(`[bench] KWOK clean-up: ${forced.join("; ")}`);
  }
}
