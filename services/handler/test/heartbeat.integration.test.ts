import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { KubeClient, type Node, resources } from "@kubevirt-ts/kube";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { describe, expect, inject } from "vitest";
import { startHeartbeat } from "../src/heartbeat.ts";
import { LabellerFile, readNodeLabellerLabels } from "../src/node-labeller.ts";

// The handler's heartbeat on the real API server: its node labelled
// schedulable with a fresh heartbeat at once and again each interval, the
// labeller's labels put on and a stale one taken off, nobody else's label
// touched; and unschedulable once the handler stops.

describe("the handler's heartbeat", () => {
  test("labels its node schedulable with the time and the labeller's labels, and unschedulable when it stops", async ({
    namespace,
  }) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(inject("kubeconfig"));
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    const name = `${namespace}-node`;
    await client.create<Node>(resources.nodes, undefined, {
      metadata: { name, labels: { team: "a", "cpu-model.node.kubevirt.io/Gone": "true" } },
    });
    const dir = await mkdtemp(join(tmpdir(), "labeller-"));
    await copyFile(
      new URL("../src/testdata/domcapabilities-qemu.xml", import.meta.url),
      join(dir, LabellerFile.domCapabilities),
    );
    const heartbeat = startHeartbeat({
      client,
      nodeName: name,
      intervalMs: 500,
      random: () => 0,
      log: createLogger({ component: "heartbeat-test", level: "warn" }),
      labels: () => readNodeLabellerLabels(dir),
    });
    const node = () => client.get<Node>(resources.nodes, undefined, name);
    try {
      await heartbeat.first;
      const first = await node();
      expect(first.metadata.labels).toMatchObject({
        "kubevirt.io/schedulable": "true",
        team: "a",
        "host-model-cpu.node.kubevirt.io/EPYC": "true",
        "cpu-model.node.kubevirt.io/Westmere": "true",
      });
      expect(first.metadata.labels).not.toHaveProperty(["cpu-model.node.kubevirt.io/Gone"]);
      const stamp = first.metadata.annotations?.["kubevirt.io/heartbeat"] ?? "";
      expect(stamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(Math.abs(Date.parse(stamp) - Date.now())).toBeLessThan(10_000);
      // It beats again: a later stamp.
      await expect
        .poll(async () => (await node()).metadata.annotations?.["kubevirt.io/heartbeat"], {
          timeout: 10_000,
          interval: 250,
        })
        .not.toBe(stamp);
    } finally {
      await heartbeat.stop();
      await rm(dir, { recursive: true, force: true });
    }
    const stopped = await node();
    expect(stopped.metadata.labels).toMatchObject({ "kubevirt.io/schedulable": "false", team: "a" });
    await client.delete(resources.nodes, undefined, name);
  });
});
