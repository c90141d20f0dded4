import { KUBEVIRT_CR_NAME, type KubeVirt, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect } from "vitest";
import { newVmi } from "./builders.ts";
import { deployComponents, launcherPods, startControllers, testClient } from "./harness.ts";

// The KubeVirt CR on the real API server, with the test namespace as the
// release namespace: the controllers follow its configuration into the next
// launcher pod, and the leader writes its status from the components'
// workloads (whose statuses the test writes, as no kube-controller-manager
// runs here).

const poll = { timeout: 20_000, interval: 200 };

describe("the KubeVirt CR", () => {
  test("is followed into the next launcher pod, and reports the components' workloads", async ({ namespace }) => {
    const client = await testClient();
    const kv = await client.create<KubeVirt>(kubevirtResources.kubeVirts, namespace, {
      apiVersion: "kubevirt.io/v1",
      kind: "KubeVirt",
      metadata: { name: KUBEVIRT_CR_NAME },
      spec: { configuration: { developerConfiguration: { cpuAllocationRatio: 5 } } },
    });
    // The API server's structural default: a configuration is always there for virtctl's patches to add into.
    expect(
      (
        await client.create<KubeVirt>(kubevirtResources.kubeVirts, namespace, {
          apiVersion: "kubevirt.io/v1",
          kind: "KubeVirt",
          metadata: { name: "bare" },
          spec: {} as KubeVirt["spec"],
        })
      ).spec.configuration,
    ).toEqual({});
    const ctl = await startControllers(namespace, { installNamespace: namespace });
    try {
      const status = async () =>
        (await client.get<KubeVirt>(kubevirtResources.kubeVirts, namespace, KUBEVIRT_CR_NAME)).status;
      await expect.poll(async () => (await status())?.phase, poll).toBe("Deploying");
      expect((await status())?.conditions?.find((c) => c.type === "Available")).toMatchObject({
        status: "False",
        message: "virt-api is not deployed; virt-controller is not deployed; virt-handler is not deployed.",
      });

      // 2 vCPUs at 5 per CPU: 400m; at 2 per CPU, one CPU.
      const cpuOf = async (name: string) => {
        const pods = (await launcherPods(client, namespace)).filter(
          (p) => p.metadata.generateName === `virt-launcher-${name}-`,
        );
        return pods[0]?.spec?.containers.find((c) => c.name === "compute")?.resources?.requests?.cpu;
      };
      const twoVcpus = () => {
        const vmi = newVmi("", namespace);
        vmi.spec.domain.cpu = { cores: 2 };
        return vmi.spec;
      };
      await client.create(
        kubevirtResources.virtualMachineInstances,
        namespace,
        newVmi("before", namespace, twoVcpus()),
      );
      await expect.poll(() => cpuOf("before"), poll).toBe("400m");
      // A change reaches the next pod without a restart.
      await client.patch(
        kubevirtResources.kubeVirts,
        namespace,
        KUBEVIRT_CR_NAME,
        { spec: { configuration: { developerConfiguration: { cpuAllocationRatio: 2 } } } },
        "merge",
      );
      await expect
        .poll(async () => {
          const name = `after-${String(Date.now())}`;
          await client.create(
            kubevirtResources.virtualMachineInstances,
            namespace,
            newVmi(name, namespace, twoVcpus()),
          );
          await expect.poll(() => cpuOf(name), poll).toBeDefined();
          return cpuOf(name);
        }, poll)
        .toBe("1");
      expect(await cpuOf("before")).toBe("400m");

      // The components, available: Deployed.
      await deployComponents(client, namespace);
      await expect.poll(async () => (await status())?.phase, poll).toBe("Deployed");
      expect((await status())?.conditions?.find((c) => c.type === "Available")).toMatchObject({
        status: "True",
        reason: "AllComponentsReady",
      });
      expect(await status()).toMatchObject({ observedKubeVirtVersion: "test", observedGeneration: 2 });
      expect(kv.metadata.generation).toBe(1);
    } finally {
      await ctl.stop();
    }
  });
});
