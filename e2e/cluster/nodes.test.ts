import type { V1Node } from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";
import { tinyVmWithSpec } from "../manifests.ts";
import { admission, core, custom, imageOf, nodeNames, suiteNamespace, undefinedIfNotFound } from "./cluster.ts";

// Nodes that say what they can run, as KubeVirt's: every handler labels its
// node kubevirt.io/schedulable=true with a fresh heartbeat and the CPU
// models, features and machine types libvirt offers there; a VM whose CPU
// model no node has waits unschedulable, saying why, and one with a model the
// nodes have runs; a node whose handler stops beating is labelled
// unschedulable by the controller once the heartbeat times out (the local
// cluster's 40 s), and schedulable again by the handler once it beats.
//
// The handler is kept from beating by a ValidatingAdmissionPolicy that refuses
// its writes to one node, rather than by stopping its process: the kubelet's
// liveness probe restarts a stopped handler within about 30 s, before the
// heartbeat's timeout, and a restarted handler beats at once.

const { name: namespace, get, launcherPods } = suiteNamespace("e2e-nodes");
const poll = { timeout: 180_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");
const STOP_POLICY = `${namespace}-stop-heartbeat`;

const labels = async (node: string) => (await core.readNode({ name: node })).metadata?.labels ?? {};
const withPrefix = (nodeLabels: Record<string, string>, prefix: string) =>
  Object.keys(nodeLabels)
    .filter((k) => k.startsWith(prefix))
    .map((k) => k.slice(prefix.length));

const vmWithModel = (name: string, model: string) =>
  tinyVmWithSpec(name, tinyGuest, namespace, (spec) => ({ ...spec, domain: { ...spec.domain, cpu: { model } } }));

afterAll(async () => {
  await admission.deleteValidatingAdmissionPolicyBinding({ name: STOP_POLICY }).catch(undefinedIfNotFound);
  await admission.deleteValidatingAdmissionPolicy({ name: STOP_POLICY }).catch(undefinedIfNotFound);
});

describe("nodes that say what they can run", () => {
  it("every node is schedulable, with a fresh heartbeat and the node labeller's CPU and machine labels", async () => {
    expect(nodeNames.length).toBeGreaterThanOrEqual(2);
    for (const node of nodeNames) {
      const { metadata } = await core.readNode({ name: node });
      expect(metadata?.labels?.["kubevirt.io/schedulable"], node).toBe("true");
      const beat = Date.parse(metadata?.annotations?.["kubevirt.io/heartbeat"] ?? "");
      // The local cluster beats every 10 s, at most 22 s apart with KubeVirt's jitter.
      expect(Date.now() - beat, node).toBeLessThan(60_000);
      const nodeLabels = metadata?.labels ?? {};
      expect(withPrefix(nodeLabels, "cpu-model.node.kubevirt.io/").length, node).toBeGreaterThan(0);
      expect(withPrefix(nodeLabels, "host-model-cpu.node.kubevirt.io/"), node).toHaveLength(1);
      expect(withPrefix(nodeLabels, "cpu-feature.node.kubevirt.io/").length, node).toBeGreaterThan(0);
      expect(withPrefix(nodeLabels, "cpu-vendor.node.kubevirt.io/"), node).toHaveLength(1);
      expect(nodeLabels["machine-type.node.kubevirt.io/q35"], node).toBe("true");
      // KubeVirt's obsolete models are never offered.
      expect(nodeLabels["cpu-model.node.kubevirt.io/qemu64"], node).toBeUndefined();
    }
  });

  it(
    "a VM whose CPU model no node has waits unschedulable, saying why; one " + "with a model the nodes have runs",
    async () => {
      const create = (body: unknown) =>
        custom.createNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachines",
          body,
        });
      await create(vmWithModel("nowhere", "NoSuchModel-kubevirt-ts"));
      const everywhere = (
        await Promise.all(
          nodeNames.map(async (n) => new Set(withPrefix(await labels(n), "cpu-model.node.kubevirt.io/"))),
        )
      ).reduce((a, b) => new Set([...a].filter((m) => b.has(m))));
      const model = [...everywhere].sort()[0];
      if (model === undefined) throw new Error("the nodes have no CPU model label in common");
      await create(vmWithModel("somewhere", model));

      await expect
        .poll(async () => (await get("virtualmachineinstances", "somewhere"))?.status?.phase, poll)
        .toBe("Running");
      const pods = await launcherPods();
      const placed = pods.find((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "somewhere");
      expect(placed?.spec?.nodeSelector).toMatchObject({
        "kubevirt.io/schedulable": "true",
        [`cpu-model.node.kubevirt.io/${model}`]: "true",
      });

      // The scheduler's reason, on the VMI's PodScheduled condition and the VM's printable status.
      const scheduled = async () =>
        (
          (await get("virtualmachineinstances", "nowhere"))?.status?.conditions as
            { type: string; status: string; reason?: string; message?: string }[] | undefined
        )?.find((c) => c.type === "PodScheduled");
      await expect.poll(scheduled, poll).toMatchObject({
        status: "False",
        reason: "Unschedulable",
        message: expect.stringMatching(/node\(s\) didn't match Pod's node affinity\/selector/) as unknown,
      });
      expect((await get("virtualmachineinstances", "nowhere"))?.status?.phase).toMatch(/^(Pending|Scheduling)$/);
      await expect
        .poll(async () => (await get("virtualmachines", "nowhere"))?.status?.printableStatus, poll)
        .toBe("ErrorUnschedulable");
      const waiting = pods.find((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "nowhere");
      expect(waiting?.spec?.nodeName).toBeUndefined();
    },
  );

  it(
    "a node whose handler stops beating is unschedulable within the timeout, " + "and schedulable once it beats again",
    async () => {
      const node = nodeNames[nodeNames.length - 1] ?? "";
      // The handler of that node may no longer write it: its heartbeat stops, the handler itself runs on.
      await admission.createValidatingAdmissionPolicy({
        body: {
          metadata: { name: STOP_POLICY },
          spec: {
            failurePolicy: "Fail",
            matchConstraints: {
              resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["nodes"] }],
            },
            matchConditions: [
              {
                name: "the-handler-on-the-node",
                expression:
                  "request.userInfo.username == " +
                  `"system:serviceaccount:kubevirt-ts:virt-handler" && request.name == ` +
                  `"${node}"`,
              },
            ],
            validations: [{ expression: "false", message: "e2e: this node's handler is kept from beating" }],
          },
        },
      });
      await admission.createValidatingAdmissionPolicyBinding({
        body: { metadata: { name: STOP_POLICY }, spec: { policyName: STOP_POLICY, validationActions: ["Deny"] } },
      });
      const stoppedAt = Date.now();
      const schedulable = async () => (await labels(node))["kubevirt.io/schedulable"];
      // 40 s of timeout after a last beat at most 22 s before, and the controller's look at it.
      await expect.poll(schedulable, { timeout: 150_000, interval: 1_000 }).toBe("false");
      const heartbeat = Date.parse(
        (await core.readNode({ name: node })).metadata?.annotations?.["kubevirt.io/heartbeat"] ?? "",
      );
      expect(Date.now() - heartbeat).toBeGreaterThanOrEqual(40_000);
      expect(Date.now() - stoppedAt).toBeLessThan(150_000);
      const events = await core.listNamespacedEvent({
        namespace: "default",
        fieldSelector: `involvedObject.name=${node},reason=NodeUnresponsive`,
      });
      expect(events.items.length).toBeGreaterThan(0);
      // The other node still takes VMIs.
      for (const other of nodeNames.filter((n) => n !== node))
        expect((await labels(other))["kubevirt.io/schedulable"]).toBe("true");

      await admission.deleteValidatingAdmissionPolicyBinding({ name: STOP_POLICY });
      await admission.deleteValidatingAdmissionPolicy({ name: STOP_POLICY });
      await expect.poll(schedulable, { timeout: 60_000, interval: 1_000 }).toBe("true");
      const beating: V1Node = await core.readNode({ name: node });
      expect(Date.now() - Date.parse(beating.metadata?.annotations?.["kubevirt.io/heartbeat"] ?? "")).toBeLessThan(
        60_000,
      );
    },
  );
});
