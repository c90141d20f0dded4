import {
  type ControllerManager,
  type Informer,
  type KubeClient,
  keyOf,
  resources,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  KUBEVIRT_CR_NAME,
  type KubeVirt,
  type LiveClusterConfig,
  featureGateWarnings,
  kubeVirtInformerOptions,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { COMPONENTS, type ComponentWorkload, kubeVirtStatus } from "./status.ts";

// The KubeVirt CR in virt-controller: every replica follows it into the live
// configuration (the controllers read it on each reconcile), and the leader
// writes its status from the components' workloads.

export interface KubeVirtDeps {
  client: KubeClient;
  /** The release namespace, where the CR and the components' workloads are. */
  namespace: string;
  live: LiveClusterConfig;
  /** The version the status reports: the chart's appVersion. */
  version: string;
  log: Logger;
  now: () => Date;
}

/**
 * An informer of the one CR kubevirt-ts reads (KUBEVIRT_CR_NAME in the release namespace), handed to the live
 * configuration.
 */
export function followKubeVirt(
  manager: ControllerManager,
  client: KubeClient,
  namespace: string,
  live: LiveClusterConfig,
  resyncMs?: number,
): Informer<KubeVirt> {
  const kvs = manager.informer<KubeVirt>({
    client,
    ...kubeVirtInformerOptions(namespace),
    ...(resyncMs !== undefined ? { resyncMs } : {}),
  });
  kvs.addHandler(live.informerHandler());
  return kvs;
}

/** The status controller: the CR, and the components' Deployments and DaemonSet, which make it look again. */
export function registerKubeVirtStatus(manager: ControllerManager, kvs: Informer<KubeVirt>, deps: KubeVirtDeps): void {
  const { client, namespace, log } = deps;
  const queue = manager.queue("kubevirts");
  const deployments = manager.informer<ComponentWorkload>({ client, type: resources.deployments, namespace });
  const daemonSets = manager.informer<ComponentWorkload>({ client, type: resources.daemonSets, namespace });
  const key = `${namespace}/${KUBEVIRT_CR_NAME}`;
  const enqueue = {
    add: () => {
      queue.add(key);
    },
    update: () => {
      queue.add(key);
    },
    delete: () => {
      queue.add(key);
    },
  };
  kvs.addHandler({
    add: (kv) => {
      queue.add(keyOf(kv));
    },
    update: (_, kv) => {
      queue.add(keyOf(kv));
    },
  });
  deployments.addHandler(enqueue);
  daemonSets.addHandler(enqueue);
  // The feature gates it ignores, said once per change of the list (the webhook says so to whoever writes it).
  let gatesSaid = "";
  manager.controller({
    name: "kubevirt",
    primary: kvs,
    queue,
    workers: 1,
    reconcile: async (k) => {
      const kv = kvs.get(k);
      if (!kv) return undefined;
      const gates = kv.spec.configuration.developerConfiguration?.featureGates ?? [];
      if (gates.join(",") !== gatesSaid) {
        gatesSaid = gates.join(",");
        for (const warning of featureGateWarnings(gates)) log.warn(warning);
      }
      const workloads = new Map<string, ComponentWorkload>();
      for (const c of COMPONENTS) {
        const found = (c.kind === "DaemonSet" ? daemonSets : deployments).get(`${namespace}/${c.name}`);
        if (found) workloads.set(c.name, found);
      }
      await writeStatusIfChanged(
        client,
        kubevirtResources.kubeVirts,
        kv,
        kubeVirtStatus(kv, workloads, deps.version, deps.now()),
      );
      return undefined;
    },
  });
}
