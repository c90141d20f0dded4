import { type Pod, resources } from "@kubevirt-ts/kube";
import {
  KUBEVIRT_CR_NAME,
  type KubeVirt,
  type VirtualMachineInstanceMigration,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect } from "vitest";
import {
  LAUNCHER_IMAGE,
  clientTest,
  deployComponents,
  getVmi,
  metricValue,
  podsOf,
  runningVmi,
  startControllers,
} from "./harness.ts";

// KubeVirt's workload updater on the real API server, with the test namespace as the release namespace: a VMI whose
// launcher pod runs another image than the installed launcher's (as after an upgrade) is labelled, counted in the
// KubeVirt CR's status and the leader's gauge, and migrated once the CR's workloadUpdateStrategy says LiveMigrate. No
// kubelet runs here: the test changes the running pod's image as an earlier release would have made it.

const poll = { timeout: 20_000, interval: 200 };
const PREVIOUS = "kubevirt-ts.local/virt-launcher:previous";
const OUTDATED = "kubevirt.io/outdatedLauncherImage";

describe("the workload updater", () => {
  clientTest(
    "labels and counts a VMI in an earlier launcher, and migrates it when the strategy says LiveMigrate",
    async ({ client, core, namespace }) => {
      await client.create<KubeVirt>(kubevirtResources.kubeVirts, namespace, {
        apiVersion: "kubevirt.io/v1",
        kind: "KubeVirt",
        metadata: { name: KUBEVIRT_CR_NAME },
        spec: { configuration: {} },
      });
      const ctl = await startControllers(namespace, { installNamespace: namespace });
      try {
        await deployComponents(client, namespace);
        const kv = async () => client.get<KubeVirt>(kubevirtResources.kubeVirts, namespace, KUBEVIRT_CR_NAME);
        await expect.poll(async () => (await kv()).status?.phase, poll).toBe("Deployed");

        await runningVmi(client, core, namespace, "old");
        await runningVmi(client, core, namespace, "current");
        const view = async (name: string) => {
          const vmi = await getVmi(client, namespace, name);
          return {
            image: vmi?.status?.launcherContainerImageVersion,
            outdated: vmi?.metadata.labels?.[OUTDATED],
          };
        };
        await expect.poll(() => view("current"), poll).toEqual({ image: LAUNCHER_IMAGE, outdated: undefined });

        // The pod of "old" runs the earlier release's launcher.
        const [pod] = (await podsOf(client, namespace, "old")).own;
        const compute = pod?.spec?.containers.findIndex((c) => c.name === "compute") ?? -1;
        await client.patch<Pod>(
          resources.pods,
          namespace,
          pod?.metadata.name ?? "",
          [{ op: "replace", path: `/spec/containers/${String(compute)}/image`, value: PREVIOUS }],
          "json",
        );
        await expect.poll(() => view("old"), poll).toEqual({ image: PREVIOUS, outdated: "" });
        // The mark is on the launcher pod too, as KubeVirt keeps it.
        await expect
          .poll(async () => (await podsOf(client, namespace, "old")).own[0]?.metadata.labels?.[OUTDATED], poll)
          .toBe("");
        expect((await podsOf(client, namespace, "current")).own[0]?.metadata.labels?.[OUTDATED]).toBeUndefined();
        await expect.poll(async () => (await kv()).status?.outdatedVirtualMachineInstanceWorkloads, poll).toBe(1);
        expect(await metricValue(ctl.registry, "kubevirt_vmi_number_of_outdated", {})).toBe(1);
        const listMigrations = async () =>
          (
            await client.list<VirtualMachineInstanceMigration>(
              kubevirtResources.virtualMachineInstanceMigrations,
              namespace,
            )
          ).items;
        // Without a method nothing is moved.
        expect(await listMigrations()).toEqual([]);

        await client.patch(
          kubevirtResources.kubeVirts,
          namespace,
          KUBEVIRT_CR_NAME,
          { spec: { workloadUpdateStrategy: { workloadUpdateMethods: ["LiveMigrate"] } } },
          "merge",
        );
        await expect.poll(async () => (await listMigrations()).length, poll).toBe(1);
        const [migration] = await listMigrations();
        expect(migration?.spec.vmiName).toBe("old");
        expect(migration?.metadata.name).toMatch(/^kubevirt-workload-update-/);
        expect(migration?.metadata.annotations).toEqual({ "kubevirt.io/workloadUpdateMigration": "" });
        expect(migration?.metadata.labels?.["kubevirt.io/vmi-name"]).toBe("old");
        // One migration, however often the updater looks while it runs.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect(await listMigrations()).toHaveLength(1);
      } finally {
        await ctl.stop();
      }
    },
  );
});
