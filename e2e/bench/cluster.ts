import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { KubeConfig, Watch } from "@kubernetes/client-node";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH, NAMESPACE } from "@kubevirt-ts/local-cluster";
import { coordination, core, undefinedIfNotFound } from "../cluster/cluster.ts";
import { podMetrics } from "../cluster/metrics.ts";
import { podProcesses } from "./proc.ts";
import { delta, parseMetrics, type Sample, sumBy } from "./prometheus.ts";

// What the benchmark reads from the local cluster: the API server's and our
// components' request counters, the memory of a pod's processes on this
// node, VMIs' phases as a watch sees them, and namespaces that go.

const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(KUBECONFIG_PATH);

export async function kubectl(...args: string[]): Promise<string> {
  const bin = join(await ensureBinaries(["kubectl"]), "kubectl");
  return (
    await promisify(execFile)(bin, [`--kubeconfig=${KUBECONFIG_PATH}`, ...args], { maxBuffer: 256 * 1024 * 1024 })
  ).stdout;
}

/** Polls until the check answers true; false when the time is up. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  intervalMs = 500,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
}

export async function createNamespace(prefix: string): Promise<string> {
  const name = `bench-${prefix}-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name, labels: { "kubevirt-ts.io/bench": "true" } } } });
  return name;
}

/** Deletes the namespace and resolves with the milliseconds until it is gone; throws when it is not gone in time. */
export async function deleteNamespace(name: string, timeoutMs = 300_000): Promise<number> {
  const started = performance.now();
  await core.deleteNamespace({ name }).catch(undefinedIfNotFound);
  const gone = await waitFor(
    async () => (await core.readNamespace({ name }).catch(undefinedIfNotFound)) === undefined,
    timeoutMs,
    250,
  );
  if (!gone)
    throw new Error(
      `namespace ${name} is still there ${String(timeoutMs / 1000)} s after its deletion; ` +
        "look at its VMIs' finalizers and launcher pods",
    );
  return performance.now() - started;
}

// Requests that change something, as the API server names its verbs.
const WRITE_VERBS = new Set([
  "POST",
  "PUT",
  "PATCH",
  "APPLY",
  "DELETE",
  "DELETECOLLECTION",
  "create",
  "update",
  "patch",
  "delete",
]);
const resourceOf = (l: Record<string, string>) => `${l.resource ?? ""}${l.subresource ? `/${l.subresource}` : ""}`;

/** The API server's writes so far, by "VERB resource[/subresource]". */
export async function apiserverWrites(): Promise<Map<string, number>> {
  return sumBy(parseMetrics(await kubectl("get", "--raw", "/metrics")), "apiserver_request_total", (l) =>
    WRITE_VERBS.has(l.verb ?? "") ? `${l.verb ?? ""} ${resourceOf(l)}` : undefined,
  );
}

export const COMPONENTS = { controller: { label: "virt-controller" }, handler: { label: "virt-handler" } } as const;
export type Component = keyof typeof COMPONENTS;

export async function componentPods(component: Component) {
  const pods = (
    await core.listNamespacedPod({
      namespace: NAMESPACE,
      labelSelector: `app.kubernetes.io/name=${COMPONENTS[component].label}`,
    })
  ).items;
  return pods.filter((p) => p.status?.phase === "Running" && p.status.podIP && !p.metadata?.deletionTimestamp);
}

/** One component's /metrics, from each of its running pods on its ops port, with the chart's scraper token. */
export async function componentMetrics(
  component: Component,
): Promise<{ pod: string; uid: string; samples: Sample[] }[]> {
  return Promise.all(
    (await componentPods(component)).map(async (pod) => ({
      pod: pod.metadata?.name ?? "",
      uid: pod.metadata?.uid ?? "",
      samples: parseMetrics(await podMetrics(pod, COMPONENTS[component].label)),
    })),
  );
}

/**
 * Our components' writes so far (kubevirt_rest_client_requests_total), by "component verb resource", summed over
 * replicas.
 */
export async function componentWrites(): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  for (const component of Object.keys(COMPONENTS) as Component[]) {
    for (const { samples } of await componentMetrics(component)) {
      const writes = sumBy(samples, "kubevirt_rest_client_requests_total", (l) =>
        WRITE_VERBS.has(l.verb ?? "") ? `${component} ${l.verb ?? ""} ${l.resource ?? ""}` : undefined,
      );
      for (const [key, value] of writes) totals.set(key, (totals.get(key) ?? 0) + value);
    }
  }
  return totals;
}

export interface WriteCounters {
  apiserver: Map<string, number>;
  components: Map<string, number>;
}

export async function writeCounters(): Promise<WriteCounters> {
  const [apiserver, components] = await Promise.all([apiserverWrites(), componentWrites()]);
  return { apiserver, components };
}

export function writesSince(before: WriteCounters, after: WriteCounters): WriteCounters {
  return {
    apiserver: delta(before.apiserver, after.apiserver),
    components: delta(before.components, after.components),
  };
}

/** The pod of the controller replica that holds the leader lease. */
export async function controllerLeader() {
  const pods = await componentPods("controller");
  const leases = (await coordination.listNamespacedLease({ namespace: NAMESPACE })).items;
  const holders = new Set(leases.map((l) => l.spec?.holderIdentity ?? ""));
  const leader = pods.find((p) => [...holders].some((h) => h !== "" && h.startsWith(p.metadata?.name ?? "\0")));
  if (!leader) throw new Error(`no controller pod holds a lease in ${NAMESPACE} (holders: ${[...holders].join(", ")})`);
  return leader;
}

/**
 * Restarts the controller (its Deployment's rollout) and waits until one of the new pods leads: a baseline of its
 * memory then holds no VMI an earlier run left in its caches.
 */
export async function restartController(timeoutMs = 180_000): Promise<void> {
  const since = Date.now();
  const selector = `app.kubernetes.io/name=${COMPONENTS.controller.label}`;
  await kubectl("-n", NAMESPACE, "rollout", "restart", "deployment", "-l", selector);
  await kubectl(
    "-n",
    NAMESPACE,
    "rollout",
    "status",
    "deployment",
    "-l",
    selector,
    `--timeout=${String(Math.round(timeoutMs / 1000))}s`,
  );
  const led = await waitFor(
    async () => {
      const leader = await controllerLeader().catch(() => undefined);
      return new Date(leader?.metadata?.creationTimestamp ?? 0).getTime() >= since - 1_000;
    },
    timeoutMs,
    1_000,
  );
  if (!led) throw new Error(`no restarted controller pod took the lease within ${String(timeoutMs / 1000)} s`);
}

/** Resident memory (bytes) of the processes on this node that run in the pod, from /proc, by their cgroup's pod uid. */
export async function podRss(uid: string): Promise<{ total: number; byCommand: Map<string, number> }> {
  const byCommand = new Map<string, number>();
  let total = 0;
  for (const pid of (await podProcesses([uid])).get(uid) ?? []) {
    const status = await readFile(`/proc/${String(pid)}/status`, "utf8").catch(() => "");
    const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? "0");
    const command = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? "?";
    total += kib * 1024;
    byCommand.set(command, (byCommand.get(command) ?? 0) + kib * 1024);
  }
  return { total, byCommand };
}

interface Phased {
  metadata?: { name?: string; creationTimestamp?: string };
  status?: {
    phase?: string;
    phaseTransitionTimestamps?: { phase: string; phaseTransitionTimestamp: string }[];
    conditions?: { type: string; status: string }[];
  };
}

/** What a watch follows: a namespace's VMIs by phase, or its pods by phase, "Ready" once their Ready condition is. */
const WATCHED = {
  vmis: {
    path: (ns: string) => `/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances`,
    phase: (o: Phased) => o.status?.phase,
  },
  pods: {
    path: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
    phase: (o: Phased) =>
      o.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? "Ready" : o.status?.phase,
  },
} as const;

/**
 * A watch on the VMIs (or pods) of a namespace that notes when (client time, performance.now() ms) each first showed
 * each phase.
 */
export class VmiPhases {
  readonly seen = new Map<string, Map<string, number>>();
  readonly latest = new Map<string, Phased>();
  /** How often the watch ended (the server's timeout, a dropped connection) and was started again. */
  restarts = 0;
  private abort: AbortController | undefined;
  private stopped = false;

  static async start(namespace: string, kind: keyof typeof WATCHED = "vmis"): Promise<VmiPhases> {
    const watcher = new VmiPhases();
    await watcher.watch(namespace, WATCHED[kind]);
    return watcher;
  }

  /**
   * Watches the namespace's VMIs until stopped: a watch that ends is started again at once (a new watch begins with
   * every VMI as it is, so a phase reached meanwhile is seen then, a little late, never lost).
   */
  private async watch(namespace: string, watched: (typeof WATCHED)[keyof typeof WATCHED]): Promise<void> {
    const again = () => {
      if (this.stopped) return;
      this.restarts++;
      setTimeout(() => {
        void this.watch(namespace, watched).catch(again);
      }, 500);
    };
    this.abort = await new Watch(kubeConfig).watch(
      watched.path(namespace),
      {},
      (_type, object: Phased) => {
        const now = performance.now();
        const name = object.metadata?.name ?? "";
        this.latest.set(name, object);
        const phases = this.seen.get(name) ?? new Map<string, number>();
        const phase = watched.phase(object);
        if (phase && !phases.has(phase)) phases.set(phase, now);
        this.seen.set(name, phases);
      },
      again,
    );
  }

  /** How many VMIs have shown the phase (or a later one that implies it). */
  count(phases: readonly string[]): number {
    return [...this.seen.values()].filter((seen) => phases.some((p) => seen.has(p))).length;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}

/**
 * Seconds from the object's creationTimestamp to its first transition into the phase, by the server's own timestamps.
 */
export function serverSeconds(vmi: Phased | undefined, phase: string): number | undefined {
  const created = Date.parse(vmi?.metadata?.creationTimestamp ?? "");
  const entered = vmi?.status?.phaseTransitionTimestamps?.find((t) => t.phase === phase)?.phaseTransitionTimestamp;
  return entered === undefined || Number.isNaN(created) ? undefined : (Date.parse(entered) - created) / 1000;
}
