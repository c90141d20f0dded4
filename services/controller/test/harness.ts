import { type CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import {
  type ControllerManager,
  type KubeObject,
  KubeClient,
  type Pod,
  type ResourceType,
  createRestClientMetrics,
  isNotFound,
  resources,
} from "@kubevirt-ts/kube";
import {
  type ClusterConfig,
  LiveClusterConfig,
  type VirtualMachine,
  type VirtualMachineInstance,
  defaultClusterConfig,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { test as kubeTest } from "@kubevirt-ts/control-plane/testing";
import { expect, inject } from "vitest";
import { createControllers } from "../src/controllers.ts";
import { newVmi } from "./builders.ts";
import type { MigrationConfig } from "../src/migration/controller.ts";

// The controllers running in the test process against the real API server of
// the global setup, and a client to look at what they do.

export const LAUNCHER_IMAGE = "kubevirt-ts.local/virt-launcher:test";

/** The cluster's migration configuration the test controllers run with: the chart's defaults. */
export const CLUSTER_MIGRATION_CONFIGURATION = {
  parallelMigrationsPerCluster: 5,
  parallelOutboundMigrationsPerNode: 2,
  allowAutoConverge: false,
  allowPostCopy: false,
  bandwidthPerMigration: "0Mi",
  completionTimeoutPerGiB: 150,
  progressTimeout: 150,
} as const;

export async function testClient(registry?: Registry): Promise<KubeClient> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  return KubeClient.fromKubeConfig(kubeConfig, registry ? createRestClientMetrics(registry) : undefined);
}

export interface RunningControllers {
  registry: Registry;
  controllers: ControllerManager;
  stop(): Promise<void>;
}

/** Controllers watching one namespace, or every namespace when it is undefined. */
export async function startControllers(
  namespace: string | undefined,
  options: {
    resyncMs?: number;
    migrations?: Partial<ClusterConfig["migrations"]> | undefined;
    timeouts?: MigrationConfig["timeouts"] | undefined;
    installNamespace?: string;
    /** false: no snapshot controller, for tests that write finished snapshots themselves. */
    snapshots?: boolean;
  } = {},
): Promise<RunningControllers> {
  const registry = new Registry();
  const client = await testClient(registry);
  const log = createLogger({ component: "virt-controller-test", level: "warn" });
  const cluster = new LiveClusterConfig(
    defaultClusterConfig({
      useEmulation: true,
      migrations: { ...CLUSTER_MIGRATION_CONFIGURATION, ...options.migrations },
    }),
  );
  const controllers = createControllers({
    client,
    log,
    registry,
    workers: 2,
    namespace,
    dataVolumes: true,
    resyncMs: options.resyncMs,
    launcherImage: LAUNCHER_IMAGE,
    cluster,
    installNamespace: options.installNamespace,
    snapshots: options.snapshots,
    version: "test",
    migrationTimeouts: options.timeouts ?? { unschedulableSeconds: 300, pendingSeconds: 900 },
  });
  const abort = new AbortController();
  const informers = controllers.runInformers(abort.signal);
  const running = controllers.runControllers(abort.signal);
  return {
    registry,
    controllers,
    stop: async () => {
      abort.abort();
      await Promise.all([informers, running]);
    },
  };
}

/** The sum of a metric's series that carry these labels, 0 when it has none yet. */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string | number> }[];
  return values
    .filter((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l))
    .reduce((sum, v) => sum + v.value, 0);
}

/** The object, or undefined when the API server says it does not exist (404); any other error fails the test. */
export async function getObject<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  namespace: string,
  name: string,
): Promise<T | undefined> {
  try {
    return await client.get<T>(type, namespace, name);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function getVm(client: KubeClient, namespace: string, name: string): Promise<VirtualMachine | undefined> {
  return getObject<VirtualMachine>(client, kubevirtResources.virtualMachines, namespace, name);
}

export async function getVmi(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<VirtualMachineInstance | undefined> {
  return getObject<VirtualMachineInstance>(client, kubevirtResources.virtualMachineInstances, namespace, name);
}

export async function launcherPods(client: KubeClient, namespace: string): Promise<Pod[]> {
  return (await client.list<Pod>(resources.pods, namespace, { labelSelector: "kubevirt.io=virt-launcher" })).items;
}

/** A test with its own namespace (control-plane's) and a client of the test API server. */
export const clientTest = kubeTest.extend<{ client: KubeClient }>({
  // eslint-disable-next-line no-empty-pattern -- vitest requires a destructuring pattern here
  client: async ({}, use) => {
    await use(await testClient());
  },
});

/** How long the shared helpers wait for the controllers. */
const helperPoll = { timeout: 20_000, interval: 100 };

/** A pod bound to a node, as the scheduler would (pods/binding). */
export async function bind(core: CoreV1Api, pod: Pod, node: string): Promise<void> {
  const { name = "", namespace = "" } = pod.metadata;
  await core.createNamespacedPodBinding({
    name,
    namespace,
    body: { metadata: { name }, target: { kind: "Node", name: node } },
  });
}

/** What the kubelet writes of a pod whose launcher runs. */
export async function runPod(client: KubeClient, pod: Pod): Promise<void> {
  const started = {
    name: "compute",
    ready: true,
    started: true,
    image: "launcher",
    imageID: "",
    restartCount: 0,
    state: { running: {} },
  };
  await client.patch(
    resources.pods,
    pod.metadata.namespace,
    pod.metadata.name ?? "",
    { status: { phase: "Running", containerStatuses: [started] } },
    "merge",
    "status",
  );
}

/** The launcher pods of the VMI: its own (no migration label), and each migration's targets. */
export async function podsOf(client: KubeClient, namespace: string, vmi: string) {
  const pods = (await launcherPods(client, namespace)).filter((p) => p.metadata.ownerReferences?.[0]?.name === vmi);
  return {
    own: pods.filter((p) => !p.metadata.labels?.["kubevirt.io/migrationJobUID"]),
    targets: pods.filter((p) => p.metadata.labels?.["kubevirt.io/migrationJobUID"]),
  };
}

/** A VMI running on node-a, as the controller and a handler leave it. */
export async function runningVmi(
  client: KubeClient,
  core: CoreV1Api,
  namespace: string,
  name: string,
  node = "node-a",
): Promise<VirtualMachineInstance> {
  await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi(name, namespace));
  await expect.poll(async () => (await podsOf(client, namespace, name)).own.length, helperPoll).toBe(1);
  const [pod] = (await podsOf(client, namespace, name)).own;
  if (!pod) throw new Error("no launcher pod");
  await bind(core, pod, node);
  await runPod(client, pod);
  await expect.poll(async () => (await getVmi(client, namespace, name))?.status?.phase, helperPoll).toBe("Scheduled");
  // The handler's part.
  await client.patch(
    kubevirtResources.virtualMachineInstances,
    namespace,
    name,
    { status: { phase: "Running" } },
    "merge",
  );
  await expect
    .poll(
      async () =>
        (await getVmi(client, namespace, name))?.status?.conditions?.find((c) => c.type === "LiveMigratable")?.status,
      helperPoll,
    )
    .toBe("True");
  const vmi = await getVmi(client, namespace, name);
  if (!vmi) throw new Error("no VMI");
  return vmi;
}

/**
 * The components' workloads, as available as kube-controller-manager would report them (none runs here): the KubeVirt
 * CR then becomes Deployed.
 */
export async function deployComponents(client: KubeClient, namespace: string): Promise<void> {
  const workload = (kind: "deployments" | "daemonSets", name: string) => ({
    apiVersion: "apps/v1",
    kind: kind === "deployments" ? "Deployment" : "DaemonSet",
    metadata: { name },
    spec: {
      ...(kind === "deployments" ? { replicas: 1 } : {}),
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image: "none" }] } },
    },
  });
  const ready = {
    deployments: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1 },
    daemonSets: {
      observedGeneration: 1,
      desiredNumberScheduled: 1,
      currentNumberScheduled: 1,
      updatedNumberScheduled: 1,
      numberAvailable: 1,
      numberReady: 1,
      numberMisscheduled: 0,
    },
  };
  for (const [kind, name] of [
    ["deployments", "virt-api"],
    ["deployments", "virt-controller"],
    ["daemonSets", "virt-handler"],
  ] as const) {
    await client.create<KubeObject>(resources[kind], namespace, workload(kind, name));
    await client.patch(resources[kind], namespace, name, { status: ready[kind] }, "merge", "status");
  }
}
