import { ApiException } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { tinyVm, tinyVmOnClaim } from "../manifests.ts";
import { core, createVm, custom, imageOf, policy, suiteNamespace } from "./cluster.ts";

// What `kubectl drain` does to a VM: it evicts the VM's launcher pod through
// Kubernetes' Eviction API, and KubeVirt's pod-eviction webhook and the
// VMI's PodDisruptionBudget answer by the VMI's evictionStrategy (ADR 12).
// A VMI that can move is migrated instead (vm-migration.test.ts); these are
// the answers for VMIs that cannot (a ReadWriteOnce claim) or need not.

const { name: namespace, get, launcherPods } = suiteNamespace("e2e-evict");
const poll = { timeout: 180_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");

async function runningVm(
  name: string,
  evictionStrategy: string,
  vm: { spec: { template: { spec: object } } } = tinyVm(name, tinyGuest, namespace),
): Promise<{ uid: string; pod: string }> {
  Object.assign(vm.spec.template.spec, { evictionStrategy });
  await createVm(namespace, vm);
  await expect.poll(async () => (await get("virtualmachineinstances", name))?.status?.phase, poll).toBe("Running");
  const uid = (await get("virtualmachineinstances", name))?.metadata.uid ?? "";
  const pod =
    (await launcherPods()).find((p) => p.metadata?.labels?.["kubevirt.io/created-by"] === uid)?.metadata?.name ?? "";
  return { uid, pod };
}

/** Evicts the pod as kubectl drain does: the answer's status code and message. */
async function evict(pod: string): Promise<{ code: number; message: string }> {
  try {
    await core.createNamespacedPodEviction({
      name: pod,
      namespace,
      body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: pod, namespace } },
    });
    return { code: 201, message: "" };
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body =
      typeof error.body === "string"
        ? (JSON.parse(error.body) as { message?: string })
        : (error.body as { message?: string });
    return { code: error.code, message: body.message ?? "" };
  }
}

const budgets = async (uid: string) =>
  (await policy.listNamespacedPodDisruptionBudget({ namespace })).items.filter(
    (b) => b.spec?.selector?.matchLabels?.["kubevirt.io/created-by"] === uid,
  );

describe("an eviction of a VM's launcher pod", () => {
  it(
    "LiveMigrate: is refused with the reason, as for a VMI KubeVirt cannot migrate, and " +
      "the VMI runs on, protected by a disruption budget",
    async () => {
      // Its disk is on a ReadWriteOnce claim: it cannot be live migrated (LiveMigratable False,
      // DisksNotLiveMigratable).
      await core.createNamespacedPersistentVolumeClaim({
        namespace,
        body: {
          metadata: { name: "keep-data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } },
        },
      });
      const { uid, pod } = await runningVm(
        "keep",
        "LiveMigrate",
        tinyVmOnClaim("keep", tinyGuest, "keep-data", namespace),
      );
      expect(await budgets(uid)).toHaveLength(1);
      const answer = await evict(pod);
      expect(answer.code).toBe(429);
      expect(answer.message).toContain("VMI keep has evictionStrategy LiveMigrate, but it cannot be live migrated");
      const vmi = await get("virtualmachineinstances", "keep");
      expect([vmi?.metadata.uid, vmi?.status?.phase]).toEqual([uid, "Running"]);
      await custom.deleteNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        name: "keep",
      });
    },
  );

  it("None: stops the VMI, which its VM (runStrategy Always) starts again", async () => {
    const { uid, pod } = await runningVm("stop", "None");
    expect(await budgets(uid)).toHaveLength(0);
    expect(await evict(pod)).toEqual({ code: 201, message: "" });
    await expect
      .poll(async () => {
        const vmi = await get("virtualmachineinstances", "stop");
        return vmi?.metadata.uid !== uid && vmi?.status?.phase === "Running";
      }, poll)
      .toBe(true);
    await custom.deleteNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      name: "stop",
    });
  });

  it(
    "External: marks the VMI with the node it is to leave, and its disruption budget " +
      "keeps the pod for the external controller",
    async () => {
      const { uid, pod } = await runningVm("external", "External");
      const answer = await evict(pod);
      expect(answer.code).toBe(429);
      expect(answer.message).toMatch(/disruption budget/);
      await expect
        .poll(async () => (await get("virtualmachineinstances", "external"))?.status?.evacuationNodeName, {
          timeout: 30_000,
          interval: 1_000,
        })
        .toBe((await get("virtualmachineinstances", "external"))?.status?.nodeName);
      expect((await get("virtualmachineinstances", "external"))?.metadata.uid).toBe(uid);
      await custom.deleteNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        name: "external",
      });
    },
  );
});
