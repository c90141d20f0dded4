import { KubeConfig } from "@kubernetes/client-node";
import { KubeClient, createRestClientMetrics, resources } from "@kubevirt-ts/kube";
import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { inject } from "vitest";
import { type Controllers, createControllers } from "../src/controllers.ts";
import type { Pod } from "../src/vmi/pod.ts";

// The controllers running in the test process against the real API server of
// the global setup, and a client to look at what they do.

export const LAUNCHER_IMAGE = "kubevirt-ts.local/virt-launcher:test";

export async function testClient(registry?: Registry): Promise<KubeClient> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  return KubeClient.fromKubeConfig(kubeConfig, registry ? createRestClientMetrics(registry) : undefined);
}

export interface RunningControllers {
  registry: Registry;
  controllers: Controllers;
  stop(): Promise<void>;
}

export async function startControllers(namespace: string): Promise<RunningControllers> {
  const registry = new Registry();
  const client = await testClient(registry);
  const log = createLogger({ component: "virt-controller-test", level: "warn" });
  const controllers = createControllers({ client, log, registry, workers: 2, namespace, pod: { launcherImage: LAUNCHER_IMAGE, imagePullPolicy: "IfNotPresent", opsPort: 9102, allowEmulation: true } });
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

/** The value of one series of a counter, 0 when it has none yet. */
export async function counterValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string | number> }[];
  return values.filter((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l)).reduce((sum, v) => sum + v.value, 0);
}

export async function getVm(client: KubeClient, namespace: string, name: string): Promise<VirtualMachine | undefined> {
  return client.get<VirtualMachine>(resources.virtualMachines, namespace, name).catch(() => undefined);
}

export async function getVmi(client: KubeClient, namespace: string, name: string): Promise<VirtualMachineInstance | undefined> {
  return client.get<VirtualMachineInstance>(resources.virtualMachineInstances, namespace, name).catch(() => undefined);
}

export async function launcherPods(client: KubeClient, namespace: string): Promise<Pod[]> {
  return (await client.list<Pod>(resources.pods, namespace, { labelSelector: "kubevirt.io=virt-launcher" })).items;
}
