import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { describe, expect } from "vitest";
import { ControllerManager, KubeClient, type KubeObject, type ResourceType } from "../src/index.ts";

// The manager against the test API server: the order it owns (every cache
// synced, every primary key queued, then the workers), an abort before the
// caches sync, and the drain on abort.

const log = createLogger({ component: "manager-test", level: "error" });
const configMaps = { group: "", version: "v1", plural: "configmaps", namespaced: true } as const satisfies ResourceType;
const serviceAccounts = {
  group: "",
  version: "v1",
  plural: "serviceaccounts",
  namespaced: true,
} as const satisfies ResourceType;
/** A resource no API server serves: its informer's list fails (404) and it never syncs. */
const unserved = {
  group: "example.com",
  version: "v1",
  plural: "nothings",
  namespaced: true,
} as const satisfies ResourceType;

const configMap = (namespace: string, name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace },
});

describe("a ControllerManager", () => {
  test("queues every primary object once all caches have synced, then runs the workers", async ({
    kubeConfig,
    namespace,
  }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    for (const name of ["a", "b", "c"]) await client.create(configMaps, namespace, configMap(namespace, name));
    const registry = new Registry();
    const manager = new ControllerManager({ log, registry });
    const cms = manager.informer<KubeObject>({ client, type: configMaps, namespace });
    const accounts = manager.informer<KubeObject>({ client, type: serviceAccounts, namespace });
    const queue = manager.queue("configmaps");
    const order: string[] = [];
    const reconciled: string[] = [];
    // No event handler queues anything: every key the workers see comes from the manager's start.
    manager.controller({
      name: "cm",
      primary: cms,
      queue,
      workers: 2,
      reconcile: (key) => {
        if (reconciled.length === 0)
          order.push(
            `first reconcile, synced ${String(manager.hasSynced())}, accounts ` +
              `cached ${String(accounts.get(`${namespace}/default`) !== undefined)}`,
          );
        reconciled.push(key);
        return Promise.resolve(undefined);
      },
    });
    manager.onSynced(() => order.push(`onSynced, queued ${String(queue.len())}`));
    const abort = new AbortController();
    const running = manager.run(abort.signal);

    await expect
      .poll(() => reconciled.toSorted(), { timeout: 10_000 })
      .toEqual(["a", "b", "c"].map((n) => `${namespace}/${n}`));
    expect(order).toEqual(["onSynced, queued 3", "first reconcile, synced true, accounts cached true"]);
    const metrics = await registry.getSingleMetricAsString("kubevirt_ts_reconcile_total");
    expect(metrics).toContain('kubevirt_ts_reconcile_total{controller="cm",result="success"} 3');
    abort.abort();
    await running;
    expect(reconciled).toHaveLength(3);
  });

  test("runs the informers alone, warm, until runControllers starts the workers", async ({ kubeConfig, namespace }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    await client.create(configMaps, namespace, configMap(namespace, "warm"));
    const manager = new ControllerManager({ log, registry: new Registry() });
    const cms = manager.informer<KubeObject>({ client, type: configMaps, namespace });
    const queue = manager.queue("configmaps");
    const reconciled: string[] = [];
    manager.controller({
      name: "cm",
      primary: cms,
      queue,
      workers: 1,
      reconcile: (key) => {
        reconciled.push(key);
        return Promise.resolve(undefined);
      },
    });
    cms.addHandler({
      add: (o) => {
        queue.add(`${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`);
      },
    });
    const abort = new AbortController();
    const informers = manager.runInformers(abort.signal);
    await expect.poll(() => manager.hasSynced(), { timeout: 10_000 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reconciled).toEqual([]);

    const leadership = new AbortController();
    const controllers = manager.runControllers(leadership.signal);
    await expect.poll(() => reconciled, { timeout: 10_000 }).toEqual([`${namespace}/warm`]);
    await expect(manager.runControllers(leadership.signal)).rejects.toThrow(/runControllers was called twice/);
    leadership.abort();
    await controllers;
    abort.abort();
    await informers;
  });

  test("an abort before every cache has synced ends runControllers without a reconcile", async ({
    kubeConfig,
    namespace,
  }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    await client.create(configMaps, namespace, configMap(namespace, "never"));
    const manager = new ControllerManager({ log, registry: new Registry() });
    const cms = manager.informer<KubeObject>({ client, type: configMaps, namespace });
    const nothing = manager.informer<KubeObject>({
      client,
      type: unserved,
      namespace,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    const queue = manager.queue("configmaps");
    let reconciles = 0;
    manager.controller({
      name: "cm",
      primary: cms,
      queue,
      workers: 1,
      reconcile: () => {
        reconciles++;
        return Promise.resolve(undefined);
      },
    });
    const abort = new AbortController();
    const running = manager.run(abort.signal);
    await expect.poll(() => cms.hasSynced(), { timeout: 10_000 }).toBe(true);
    const waiting = nothing.waitForSync(abort.signal);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(manager.hasSynced()).toBe(false);

    abort.abort();
    await running;
    await expect(waiting).resolves.toBe(false);
    expect(reconciles).toBe(0);
    expect(queue.shuttingDown()).toBe(true);
  });

  test("on abort the queues take no more keys and the workers finish the keys they hold", async ({
    kubeConfig,
    namespace,
  }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    await client.create(configMaps, namespace, configMap(namespace, "held"));
    const manager = new ControllerManager({ log, registry: new Registry() });
    const cms = manager.informer<KubeObject>({ client, type: configMaps, namespace });
    const queue = manager.queue("configmaps");
    const started = Promise.withResolvers<undefined>();
    const release = Promise.withResolvers<undefined>();
    const finished: string[] = [];
    manager.controller({
      name: "cm",
      primary: cms,
      queue,
      workers: 1,
      reconcile: async (key) => {
        started.resolve(undefined);
        await release.promise;
        finished.push(key);
        return undefined;
      },
    });
    const abort = new AbortController();
    let stopped = false;
    const running = manager.run(abort.signal).then(() => {
      stopped = true;
    });
    await started.promise;
    abort.abort();
    queue.add(`${namespace}/after-abort`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stopped).toBe(false);

    release.resolve(undefined);
    await running;
    expect(finished).toEqual([`${namespace}/held`]);
  });
});
