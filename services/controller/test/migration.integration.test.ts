import { type KubeClient, type KubeObject, type Pod, resources } from "@kubevirt-ts/kube";
import {
  type MigrationPolicy,
  type MigrationPolicySpec,
  type MigrationState,
  type VirtualMachineInstanceMigration,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect } from "vitest";
import {
  CLUSTER_MIGRATION_CONFIGURATION,
  getObject,
  getVmi,
  startControllers,
  clientTest,
  bind,
  podsOf,
  runPod as run,
  runningVmi,
} from "./harness.ts";
import type { MigrationConfig } from "../src/migration/controller.ts";
import type { ClusterConfig } from "@kubevirt-ts/kubevirt-api";

// The migration controller against a real kube-apiserver. There is no
// scheduler, kubelet or handler here: the test binds pods to nodes (the
// pods/binding subresource), says their containers run (pods/status), and
// writes what the handlers write in the VMI's migrationState (migration.ts).

const poll = { timeout: 20_000, interval: 100 };

const withClient = clientTest;

/** Controllers for one test, with its own migration settings. */
async function withControllers(
  namespace: string,
  options: { cluster?: Partial<ClusterConfig["migrations"]>; timeouts?: MigrationConfig["timeouts"] },
  body: () => Promise<void>,
): Promise<void> {
  const ctl = await startControllers(namespace, { migrations: options.cluster, timeouts: options.timeouts });
  try {
    await body();
  } finally {
    await ctl.stop();
  }
}

const migrations = kubevirtResources.virtualMachineInstanceMigrations;
const getMigration = (client: KubeClient, namespace: string, name: string) =>
  getObject<VirtualMachineInstanceMigration>(client, migrations, namespace, name);

const newMigration = (
  name: string,
  vmiName: string,
  addedNodeSelector?: Record<string, string>,
): VirtualMachineInstanceMigration => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstanceMigration",
  metadata: { name },
  spec: { vmiName, ...(addedNodeSelector ? { addedNodeSelector } : {}) },
});

/** A handler's write of the VMI's migrationState. */
async function handlerWrites(
  client: KubeClient,
  namespace: string,
  name: string,
  state: Partial<MigrationState>,
): Promise<void> {
  await client.patch(
    kubevirtResources.virtualMachineInstances,
    namespace,
    name,
    { status: { migrationState: state } },
    "merge",
  );
}

const phaseOf = async (client: KubeClient, namespace: string, name: string) =>
  (await getMigration(client, namespace, name))?.status?.phase;

describe("a migration, from its target pod to its end", () => {
  withClient(
    "moves a VMI to the target pod's node: Scheduling, Scheduled, then the handlers' phases, and the source pod goes",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, {}, async () => {
        const vmi = await runningVmi(client, core, namespace, "web");
        const [source] = (await podsOf(client, namespace, "web")).own;
        const created = await client.create(
          migrations,
          namespace,
          newMigration("move", "web", { "kubernetes.io/hostname": "node-b" }),
        );
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("Scheduling");
        const [target] = (await podsOf(client, namespace, "web")).targets;
        expect(target?.metadata.labels?.["kubevirt.io/migrationJobUID"]).toBe(created.metadata.uid);
        expect(target?.spec?.nodeSelector).toEqual({
          "kubernetes.io/hostname": "node-b",
          "kubevirt.io/schedulable": "true",
        });
        expect(target?.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
          {
            labelSelector: {
              matchExpressions: [{ key: "kubevirt.io/created-by", operator: "In", values: [vmi.metadata.uid] }],
            },
            topologyKey: "kubernetes.io/hostname",
          },
        ]);
        expect((await getMigration(client, namespace, "move"))?.metadata.finalizers).toContain(
          "kubevirt.io/migrationJobFinalize",
        );
        // KubeVirt's label, which virtctl migrate-cancel selects: added to a migration made without it.
        expect((await getMigration(client, namespace, "move"))?.metadata.labels?.["kubevirt.io/vmi-name"]).toBe("web");
        if (!target || !source) throw new Error("no pods");
        // The source pod: gone (404), deleting (a deletionTimestamp; no kubelet here ends it), or still running.
        const sourcePod = async () => {
          const pod = await getObject<Pod>(client, resources.pods, namespace, source.metadata.name ?? "");
          return pod === undefined ? "gone" : pod.metadata.deletionTimestamp ? "deleting" : "still running";
        };

        await bind(core, target, "node-b");
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("PreparingTarget");
        const handedOver = await getVmi(client, namespace, "web");
        expect(handedOver?.status?.migrationState).toMatchObject({
          migrationUid: created.metadata.uid,
          sourceNode: "node-a",
          sourcePod: source.metadata.name,
          targetNode: "node-b",
          targetPod: target.metadata.name,
        });
        expect(handedOver?.status?.migrationState?.startTimestamp).toBeTruthy();
        // No MigrationPolicy matches it: the cluster's configuration, and no policy named.
        expect(handedOver?.status?.migrationState?.migrationConfiguration).toEqual(CLUSTER_MIGRATION_CONFIGURATION);
        expect(handedOver?.status?.migrationState?.migrationPolicyName).toBeUndefined();
        expect(handedOver?.metadata.labels?.["kubevirt.io/migrationTargetNodeName"]).toBe("node-b");
        const phases = (await getMigration(client, namespace, "move"))?.status?.phaseTransitionTimestamps?.map(
          (t) => t.phase,
        );
        expect(phases).toEqual(["Pending", "Scheduling", "Scheduled", "PreparingTarget"]);

        await run(client, target);
        await handlerWrites(client, namespace, "web", {
          targetNodeAddress: "10.0.0.2",
          targetDirectMigrationNodePorts: { "40001": 49152 },
        });
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("TargetReady");
        await handlerWrites(client, namespace, "web", { mode: "PreCopy" });
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("Running");
        expect(await sourcePod()).toBe("still running");
        await handlerWrites(client, namespace, "web", { completed: true, endTimestamp: new Date().toISOString() });
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("Succeeded");

        await expect.poll(async () => (await getVmi(client, namespace, "web"))?.status?.nodeName, poll).toBe("node-b");
        const moved = await getVmi(client, namespace, "web");
        expect(moved?.status?.activePods).toEqual({ [target.metadata.uid ?? ""]: "node-b" });
        expect(moved?.status?.phase).toBe("Running");
        expect(moved?.metadata.labels?.["kubevirt.io/nodeName"]).toBe("node-b");
        expect(moved?.metadata.labels?.["kubevirt.io/migrationTargetNodeName"]).toBeUndefined();
        await expect.poll(sourcePod, poll).toMatch(/^(gone|deleting)$/);
        expect(await getObject<Pod>(client, resources.pods, namespace, target.metadata.name ?? "")).toBeDefined();
        expect((await getMigration(client, namespace, "move"))?.status?.migrationState).toMatchObject({
          completed: true,
          targetNode: "node-b",
        });

        // The next migration moves it on under a MigrationPolicy: of two that select its namespace, the one that
        // selects it by its labels too, matching more labels. Deleting the migration that ended leaves the pod the VMI
        // runs in, which carries its label.
        await client.patch(
          resources.namespaces,
          undefined,
          namespace,
          { metadata: { labels: { "policy-test": namespace } } },
          "merge",
        );
        const policy = (
          name: string,
          spec: Omit<MigrationPolicySpec, "selectors">,
          selectors: MigrationPolicySpec["selectors"],
        ) =>
          client.create<MigrationPolicy & KubeObject>(kubevirtResources.migrationPolicies, undefined, {
            apiVersion: "migrations.kubevirt.io/v1alpha1",
            kind: "MigrationPolicy",
            metadata: { name },
            spec: { ...spec, selectors },
          });
        // The name of the one that matches fewer labels comes first: only the count decides.
        const policies = [`${namespace}-z-ns-and-vmi`, `${namespace}-a-ns`];
        await policy(
          policies[0] ?? "",
          { bandwidthPerMigration: "64Mi", completionTimeoutPerGiB: 30, allowAutoConverge: true },
          {
            namespaceSelector: { "policy-test": namespace },
            virtualMachineInstanceSelector: { "kubevirt.io/nodeName": "node-b" },
          },
        );
        await policy(
          policies[1] ?? "",
          { bandwidthPerMigration: "1Mi" },
          { namespaceSelector: { "policy-test": namespace } },
        );
        try {
          await client.create(migrations, namespace, newMigration("again", "web"));
          await expect
            .poll(
              async () =>
                (await podsOf(client, namespace, "web")).targets.filter((p) => p.metadata.name !== target.metadata.name)
                  .length,
              poll,
            )
            .toBe(1);
          const next = (await podsOf(client, namespace, "web")).targets.find(
            (p) => p.metadata.name !== target.metadata.name,
          );
          if (!next) throw new Error("no target pod for the next migration");
          await bind(core, next, "node-c");
          await expect.poll(() => phaseOf(client, namespace, "again"), poll).toBe("PreparingTarget");
          expect((await getVmi(client, namespace, "web"))?.status?.migrationState).toMatchObject({
            sourceNode: "node-b",
            sourcePod: target.metadata.name,
            targetNode: "node-c",
            migrationPolicyName: policies[0],
            migrationConfiguration: {
              ...CLUSTER_MIGRATION_CONFIGURATION,
              bandwidthPerMigration: "64Mi",
              completionTimeoutPerGiB: 30,
              allowAutoConverge: true,
            },
          });
        } finally {
          for (const name of policies) await client.delete(kubevirtResources.migrationPolicies, undefined, name);
        }
        await client.delete(migrations, namespace, "move");
        await expect.poll(() => getMigration(client, namespace, "move"), poll).toBeUndefined();
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(
          (await getObject<Pod>(client, resources.pods, namespace, target.metadata.name ?? ""))?.metadata
            .deletionTimestamp,
        ).toBeUndefined();
      });
    },
  );
});

describe("the disruption budget while a VMI moves", () => {
  withClient(
    "protects both pods (minAvailable 2, labelled with the migration) until the migration ends",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, {}, async () => {
        const vmi = await runningVmi(client, core, namespace, "web");
        // LiveMigrate asks for a budget; the VMI controller makes it.
        await client.patch(
          kubevirtResources.virtualMachineInstances,
          namespace,
          "web",
          { spec: { evictionStrategy: "LiveMigrate" } },
          "merge",
        );
        const budget = () =>
          getObject<KubeObject & { spec: { minAvailable: number } }>(
            client,
            resources.podDisruptionBudgets,
            namespace,
            `kubevirt-disruption-budget-${vmi.metadata.uid ?? ""}`,
          );
        await expect.poll(async () => (await budget())?.spec.minAvailable, poll).toBe(1);
        await client.create(migrations, namespace, newMigration("move", "web"));
        await expect.poll(async () => (await budget())?.spec.minAvailable, poll).toBe(2);
        expect((await budget())?.metadata.labels?.["kubevirt.io/migrationName"]).toBe("move");
        await client.delete(migrations, namespace, "move");
        await expect.poll(async () => (await budget())?.spec.minAvailable, poll).toBe(1);
        expect((await budget())?.metadata.labels?.["kubevirt.io/migrationName"]).toBeUndefined();
      });
    },
  );
});

describe("cancelling a migration by deleting it", () => {
  withClient("before the hand-over deletes its target pod and lets it go", async ({ client, core, namespace }) => {
    await withControllers(namespace, {}, async () => {
      await runningVmi(client, core, namespace, "web");
      await client.create(migrations, namespace, newMigration("move", "web"));
      await expect.poll(async () => (await podsOf(client, namespace, "web")).targets.length, poll).toBe(1);
      await client.delete(migrations, namespace, "move");
      await expect.poll(() => getMigration(client, namespace, "move"), poll).toBeUndefined();
      await expect
        .poll(
          async () =>
            (await podsOf(client, namespace, "web")).targets.filter((p) => !p.metadata.deletionTimestamp).length,
          poll,
        )
        .toBe(0);
    });
  });

  withClient(
    "after it asks the source's handler to abort, and when it has, deletes the " +
      "target pod and lets it go; the VMI runs on",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, {}, async () => {
        await runningVmi(client, core, namespace, "web");
        await client.create(migrations, namespace, newMigration("move", "web"));
        await expect.poll(async () => (await podsOf(client, namespace, "web")).targets.length, poll).toBe(1);
        const [target] = (await podsOf(client, namespace, "web")).targets;
        if (!target) throw new Error("no target pod");
        await bind(core, target, "node-b");
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("PreparingTarget");
        await handlerWrites(client, namespace, "web", { targetNodeAddress: "10.0.0.2", mode: "PreCopy" });
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("Running");

        await client.delete(migrations, namespace, "move");
        await expect
          .poll(async () => (await getVmi(client, namespace, "web"))?.status?.migrationState?.abortRequested, poll)
          .toBe(true);
        expect(await getMigration(client, namespace, "move")).toBeDefined();
        await handlerWrites(client, namespace, "web", {
          abortStatus: "Succeeded",
          failed: true,
          failureReason: "Migration aborted",
          endTimestamp: new Date().toISOString(),
        });
        await expect.poll(() => getMigration(client, namespace, "move"), poll).toBeUndefined();
        await expect
          .poll(
            async () =>
              (await podsOf(client, namespace, "web")).targets.filter((p) => !p.metadata.deletionTimestamp).length,
            poll,
          )
          .toBe(0);
        const vmi = await getVmi(client, namespace, "web");
        expect(vmi?.status).toMatchObject({
          phase: "Running",
          nodeName: "node-a",
          migrationState: { failed: true, failureReason: "Migration aborted" },
        });
        expect(vmi?.metadata.labels?.["kubevirt.io/migrationTargetNodeName"]).toBeUndefined();
      });
    },
  );
});

describe("timeouts and limits", () => {
  withClient(
    "a target pod pending past the timeout fails the migration, goes, and the VMI says why",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, { timeouts: { unschedulableSeconds: 300, pendingSeconds: 2 } }, async () => {
        await runningVmi(client, core, namespace, "web");
        await client.create(migrations, namespace, newMigration("move", "web"));
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("Failed");
        expect((await getVmi(client, namespace, "web"))?.status?.migrationState).toMatchObject({
          failed: true,
          failureReason: expect.stringMatching(/was pending for 2 s$/) as unknown,
        });
        await expect
          .poll(
            async () =>
              (await podsOf(client, namespace, "web")).targets.filter((p) => !p.metadata.deletionTimestamp).length,
            poll,
          )
          .toBe(0);
        expect((await getVmi(client, namespace, "web"))?.status?.phase).toBe("Running");
      });
    },
  );

  withClient(
    "a target pod unschedulable past its timeout fails the migration with the scheduler's words",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, { timeouts: { unschedulableSeconds: 1, pendingSeconds: 900 } }, async () => {
        await runningVmi(client, core, namespace, "web");
        await client.create(migrations, namespace, newMigration("move", "web"));
        await expect.poll(async () => (await podsOf(client, namespace, "web")).targets.length, poll).toBe(1);
        const [target] = (await podsOf(client, namespace, "web")).targets;
        // What the scheduler writes of a pod no node fits.
        const unschedulable = {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules",
          lastTransitionTime: new Date().toISOString(),
        };
        await client.patch(
          resources.pods,
          namespace,
          target?.metadata.name ?? "",
          { status: { phase: "Pending", conditions: [unschedulable] } },
          "merge",
          "status",
        );
        await expect.poll(() => phaseOf(client, namespace, "move"), poll).toBe("Failed");
        expect((await getVmi(client, namespace, "web"))?.status?.migrationState?.failureReason).toMatch(
          /was unschedulable for 1 s: 0\/2 nodes are available: 1 node\(s\) didn't match pod anti-affinity rules$/,
        );
        await expect
          .poll(
            async () =>
              (await podsOf(client, namespace, "web")).targets.filter((p) => !p.metadata.deletionTimestamp).length,
            poll,
          )
          .toBe(0);
      });
    },
  );

  withClient(
    "migrations past the cluster's limit wait in Pending until one ends",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, { cluster: { parallelMigrationsPerCluster: 1 } }, async () => {
        await runningVmi(client, core, namespace, "one");
        await runningVmi(client, core, namespace, "two", "node-c");
        await client.create(migrations, namespace, newMigration("first", "one"));
        await expect.poll(() => phaseOf(client, namespace, "first"), poll).toBe("Scheduling");
        await client.create(migrations, namespace, newMigration("second", "two"));
        await expect.poll(() => phaseOf(client, namespace, "second"), poll).toBe("Pending");
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect(await phaseOf(client, namespace, "second")).toBe("Pending");
        expect((await podsOf(client, namespace, "two")).targets).toEqual([]);
        await client.delete(migrations, namespace, "first");
        await expect.poll(() => phaseOf(client, namespace, "second"), poll).toBe("Scheduling");
      });
    },
  );

  withClient("a node sends out no more migrations at once than its limit", async ({ client, core, namespace }) => {
    await withControllers(namespace, { cluster: { parallelOutboundMigrationsPerNode: 1 } }, async () => {
      await runningVmi(client, core, namespace, "one");
      await runningVmi(client, core, namespace, "two");
      await runningVmi(client, core, namespace, "three", "node-c");
      await client.create(migrations, namespace, newMigration("first", "one"));
      await expect.poll(() => phaseOf(client, namespace, "first"), poll).toBe("Scheduling");
      await client.create(migrations, namespace, newMigration("second", "two"));
      await client.create(migrations, namespace, newMigration("third", "three"));
      await expect.poll(() => phaseOf(client, namespace, "third"), poll).toBe("Scheduling");
      expect(await phaseOf(client, namespace, "second")).toBe("Pending");
    });
  });
});

describe("ended migrations", () => {
  withClient("a VMI keeps its newest five", async ({ client, core, namespace }) => {
    await withControllers(namespace, {}, async () => {
      await runningVmi(client, core, namespace, "web");
      // Each fails at once: its VMI stops being migratable for it (a bridge would do; here the VMI is made not
      // Running).
      await client.patch(
        kubevirtResources.virtualMachineInstances,
        namespace,
        "web",
        { status: { phase: "Scheduled" } },
        "merge",
      );
      for (let i = 0; i < 7; i++) {
        await client.create(migrations, namespace, newMigration(`m${String(i)}`, "web"));
        await expect.poll(() => phaseOf(client, namespace, `m${String(i)}`), poll).toBe("Failed");
        // Creation times are in seconds: one a second keeps their order.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      await expect
        .poll(
          async () =>
            (await client.list<VirtualMachineInstanceMigration>(migrations, namespace)).items
              .map((m) => m.metadata.name)
              .sort(),
          poll,
        )
        .toEqual(["m2", "m3", "m4", "m5", "m6"]);
    });
  });
});

describe("evacuation", () => {
  withClient(
    "a VMI marked for evacuation from its node, whose strategy migrates it, gets one kubevirt-evacuation- migration",
    async ({ client, core, namespace }) => {
      await withControllers(namespace, {}, async () => {
        await runningVmi(client, core, namespace, "web");
        await runningVmi(client, core, namespace, "stays");
        await client.patch(
          kubevirtResources.virtualMachineInstances,
          namespace,
          "web",
          { spec: { evictionStrategy: "LiveMigrate" } },
          "merge",
        );
        // virt-api's eviction webhook marks both; "stays" has no strategy that migrates it (the test's cluster default
        // is None).
        for (const name of ["web", "stays"])
          await client.patch(
            kubevirtResources.virtualMachineInstances,
            namespace,
            name,
            { status: { evacuationNodeName: "node-a" } },
            "merge",
          );
        await expect
          .poll(
            async () => (await client.list<VirtualMachineInstanceMigration>(migrations, namespace)).items.length,
            poll,
          )
          .toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const [migration, ...more] = (await client.list<VirtualMachineInstanceMigration>(migrations, namespace)).items;
        expect(more).toEqual([]);
        expect(migration?.metadata.name).toMatch(/^kubevirt-evacuation-/);
        expect(migration?.metadata.annotations).toEqual({ "kubevirt.io/evacuationMigration": "node-a" });
        expect(migration?.spec).toEqual({ vmiName: "web" });
      });
    },
  );
});
