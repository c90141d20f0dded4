import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { type ControlPlane, ensureBinaries, freePort, startControlPlane } from "@kubevirt-ts/control-plane";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Informer, KubeClient, type KubeObject, keyOf } from "../src/index.ts";

// An informer against an API server of its own, which the test stops and
// starts again: the informer must notice what changed meanwhile.

const log = createLogger({ component: "informer-test", level: "error" });
const configMaps = { group: "", version: "v1", plural: "configmaps", namespaced: true } as const;
let dir: string;
let binDir: string;
let controlPlane: ControlPlane;
let ports: { apiserverPort: number; etcdPort: number; etcdPeerPort: number };

/** The same API server again: same ports, certificates and etcd data. */
function restart(): Promise<ControlPlane> {
  return startControlPlane({ dir, binDir, ...ports, certificates: controlPlane.certificates });
}

async function clientFor(cp: ControlPlane): Promise<KubeClient> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(cp.kubeconfig);
  return KubeClient.fromKubeConfig(kubeConfig);
}

const configMap = (name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
});

beforeAll(async () => {
  binDir = await ensureBinaries();
  dir = await mkdtemp(join(tmpdir(), "kubevirt-ts-informer-"));
  ports = { apiserverPort: await freePort(), etcdPort: await freePort(), etcdPeerPort: await freePort() };
  controlPlane = await startControlPlane({ dir, binDir, ...ports });
});

afterAll(async () => {
  await controlPlane.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("an informer", () => {
  it("catches up after the API server restarts", async () => {
    const client = await clientFor(controlPlane);
    await client.create(configMaps, "default", configMap("before"));
    const informer = new Informer<KubeObject>({
      client,
      type: configMaps,
      namespace: "default",
      log,
      backoff: { initialMs: 100, maxMs: 1_000 },
    });
    const seen: string[] = [];
    informer.addHandler({ add: (o) => seen.push(`add ${keyOf(o)}`), delete: (o) => seen.push(`delete ${keyOf(o)}`) });
    const abort = new AbortController();
    const running = informer.run(abort.signal);
    await informer.waitForSync();
    expect(informer.get("default/before")).toBeDefined();

    await controlPlane.stop();
    controlPlane = await restart();
    const after = await clientFor(controlPlane);
    await after.create(configMaps, "default", configMap("after"));
    await after.delete(configMaps, "default", "before");

    await expect
      .poll(
        () =>
          informer
            .list()
            .map(keyOf)
            .filter((k) => k.startsWith("default/be") || k.startsWith("default/af")),
        { timeout: 30_000 },
      )
      .toEqual(["default/after"]);
    expect(seen).toEqual(expect.arrayContaining(["add default/before", "add default/after", "delete default/before"]));
    abort.abort();
    await running;
  });

  it("keeps cached objects frozen, so nobody changes the cache by accident", async () => {
    const client = await clientFor(controlPlane);
    await client.create(configMaps, "default", configMap("frozen"));
    const cms = new Informer<KubeObject>({ client, type: configMaps, namespace: "default", log });
    const abort = new AbortController();
    const running = cms.run(abort.signal);
    await cms.waitForSync();
    const cached = cms.get("default/frozen");
    expect(Object.isFrozen(cached)).toBe(true);
    expect(Object.isFrozen(cached?.metadata)).toBe(true);
    abort.abort();
    await running;
  });

  it("with a resync period, hands every cached object to update again while nothing changes", async () => {
    const client = await clientFor(controlPlane);
    await client.create(configMaps, "default", configMap("resynced"));
    const cms = new Informer<KubeObject>({ client, type: configMaps, namespace: "default", log, resyncMs: 200 });
    const resyncs: string[] = [];
    cms.addHandler({
      update: (previous, current) => {
        if (previous === current) resyncs.push(keyOf(current));
      },
    });
    const abort = new AbortController();
    const running = cms.run(abort.signal);
    await cms.waitForSync();
    await expect
      .poll(() => resyncs.filter((k) => k === "default/resynced").length, { timeout: 5_000 })
      .toBeGreaterThanOrEqual(3);
    abort.abort();
    await running;
    const after = resyncs.length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(resyncs.length).toBe(after);
  });

  it("without one, never calls update for an unchanged object", async () => {
    const client = await clientFor(controlPlane);
    await client.create(configMaps, "default", configMap("quiet"));
    const cms = new Informer<KubeObject>({ client, type: configMaps, namespace: "default", log });
    let updates = 0;
    cms.addHandler({
      update: () => {
        updates++;
      },
    });
    const abort = new AbortController();
    const running = cms.run(abort.signal);
    await cms.waitForSync();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(updates).toBe(0);
    abort.abort();
    await running;
  });
});
