import { ControllerManager, type Node, type Pod, createEventRecorder, keyOf, resources } from "@kubevirt-ts/kube";
import { LAUNCHER_PODS_BY_VMI, launcherPodIndex } from "@kubevirt-ts/node-contract";
import { Label, LabelValue, type VirtualMachineInstance, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { describe, expect } from "vitest";
import { VMIS_BY_NODE, createNodeReconciler, vmisByNode } from "../src/node/controller.ts";
import { testClient } from "./harness.ts";

// KubeVirt's node controller on the real API server, with a heartbeat timeout
// of seconds: a node whose handler stops beating loses kubevirt.io/schedulable,
// its VMI whose launcher pod is gone is Failed (NodeUnresponsive), and the one
// whose pod is still there is left alone.

const TIMEOUT_MS = 3_000;

describe("the node controller", () => {
  test("marks a node whose handler stopped beating unschedulable and fails its orphaned VMIs", async ({
    namespace,
  }) => {
    const client = await testClient();
    const log = createLogger({ component: "node-controller-test", level: "warn" });
    const manager = new ControllerManager({ log, registry: new Registry() });
    const nodes = manager.informer<Node>({ client, type: resources.nodes });
    const vmis = manager.informer<VirtualMachineInstance>({
      client,
      type: kubevirtResources.virtualMachineInstances,
      namespace,
      indexers: { [VMIS_BY_NODE]: vmisByNode },
    });
    const pods = manager.informer<Pod>({
      client,
      type: resources.pods,
      namespace,
      labelSelector: `${Label.App}=${LabelValue.Launcher}`,
      indexers: { [LAUNCHER_PODS_BY_VMI]: launcherPodIndex },
    });
    const queue = manager.queue("nodes");
    nodes.addHandler({
      add: (n) => {
        queue.add(keyOf(n));
      },
      update: (_, n) => {
        queue.add(keyOf(n));
      },
      delete: (n) => {
        queue.add(keyOf(n));
      },
    });
    manager.controller({
      name: "node",
      primary: nodes,
      queue,
      workers: 1,
      reconcile: createNodeReconciler({
        client,
        nodes,
        vmis,
        pods,
        recorder: createEventRecorder(client, "virt-controller", log),
        log,
        now: () => new Date(),
        timeoutMs: TIMEOUT_MS,
      }),
    });

    const name = `${namespace}-node`;
    const beating = `${namespace}-beating`;
    const heartbeat = (at: Date) => ({ "kubevirt.io/heartbeat": at.toISOString().replace(/\.\d+Z$/, "Z") });
    await client.create<Node>(resources.nodes, undefined, {
      metadata: { name, labels: { "kubevirt.io/schedulable": "true" }, annotations: heartbeat(new Date()) },
    });
    // A node whose handler keeps beating (its heartbeat far ahead) stays schedulable.
    await client.create<Node>(resources.nodes, undefined, {
      metadata: {
        name: beating,
        labels: { "kubevirt.io/schedulable": "true" },
        annotations: heartbeat(new Date(Date.now() + 3_600_000)),
      },
    });
    const vmiOn = async (vmiName: string) =>
      client.create<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name: vmiName },
        spec: { domain: { devices: {} } },
        status: { phase: "Running", nodeName: name },
      });
    const orphan = await vmiOn("orphan");
    const kept = await vmiOn("kept");
    await client.create<Pod>(resources.pods, namespace, {
      metadata: {
        name: "virt-launcher-kept",
        labels: { [Label.App]: LabelValue.Launcher, [Label.CreatedBy]: kept.metadata.uid ?? "" },
        ownerReferences: [
          {
            apiVersion: "kubevirt.io/v1",
            kind: "VirtualMachineInstance",
            name: "kept",
            uid: kept.metadata.uid ?? "",
            controller: true,
          },
        ],
      },
      spec: { nodeName: name, containers: [{ name: "compute", image: "none" }] },
    });

    const abort = new AbortController();
    const running = [manager.runInformers(abort.signal), manager.runControllers(abort.signal)];
    try {
      const labelOf = async (n: string) =>
        (await client.get<Node>(resources.nodes, undefined, n)).metadata.labels?.["kubevirt.io/schedulable"];
      // Still beating within the timeout: schedulable.
      expect(await labelOf(name)).toBe("true");
      await expect.poll(() => labelOf(name), { timeout: TIMEOUT_MS + 15_000, interval: 250 }).toBe("false");
      const orphanPhase = async () =>
        (
          await client.get<VirtualMachineInstance>(
            kubevirtResources.virtualMachineInstances,
            namespace,
            orphan.metadata.name ?? "",
          )
        ).status;
      await expect
        .poll(orphanPhase, { timeout: 10_000 })
        .toMatchObject({ phase: "Failed", reason: "NodeUnresponsive" });
      expect(
        (await client.get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, "kept")).status
          ?.phase,
      ).toBe("Running");
      expect(await labelOf(beating)).toBe("true");
      const events = await client.list<{
        metadata: { name?: string };
        reason?: string;
        involvedObject?: { name?: string };
      }>(resources.events, namespace);
      expect(events.items.some((e) => e.reason === "NodeUnresponsive" && e.involvedObject?.name === "orphan")).toBe(
        true,
      );
    } finally {
      abort.abort();
      await Promise.all(running);
      await client.delete(resources.nodes, undefined, name);
      await client.delete(resources.nodes, undefined, beating);
    }
  });
});
