import { KubeConfig } from "@kubernetes/client-node";
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
import { inject } from "vitest";
import { createControllers } from "../src/controllers.ts";
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
