import { AdmissionregistrationV1Api, type CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { describe, expect } from "vitest";
import { evacuationNodeName, runningVmi, startWebhooks } from "./harness.ts";

// The migration webhook and the pod-eviction webhook registered with the
// real API server: what they admit and refuse, with the VMI read (and marked
// for evacuation) by the API's own account.

const log = createLogger({ component: "migration-webhook-test", level: "error" });

interface Hook {
  /** The webhook's path on the server, as the chart names it (validate-<resource>). */
  path: string;
  rule: { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] };
}

const MIGRATIONS: Hook = {
  path: "validate-virtualmachineinstancemigrations",
  rule: {
    apiGroups: ["kubevirt.io"],
    apiVersions: ["v1"],
    operations: ["CREATE", "UPDATE"],
    resources: ["virtualmachineinstancemigrations"],
  },
};
const EVICTIONS: Hook = {
  path: "validate-pod-eviction",
  rule: { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods/eviction"] },
};

/** The webhook server, registered for this hook in the namespace, for the length of `body`. */
async function withWebhook(
  kubeConfig: KubeConfig,
  namespace: string,
  hook: Hook,
  body: () => Promise<void>,
): Promise<void> {
  const webhooks = await startWebhooks(kubeConfig, log);
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  await admission.createValidatingWebhookConfiguration({
    body: {
      metadata: { name: namespace },
      webhooks: [
        {
          name: `${hook.path}.kubevirt-ts.io`,
          admissionReviewVersions: ["v1"],
          sideEffects: "NoneOnDryRun",
          failurePolicy: "Fail",
          clientConfig: { url: `${webhooks.url}/${hook.path}`, caBundle: webhooks.caBundle },
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
          rules: [hook.rule],
        },
      ],
    },
  });
  try {
    await body();
  } finally {
    await admission.deleteValidatingWebhookConfiguration({ name: namespace });
    webhooks.close();
  }
}

const group = (namespace: string, plural: string) => ({ group: "kubevirt.io", version: "v1", namespace, plural });
const migration = (name: string, vmiName: string) => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstanceMigration",
  metadata: { name },
  spec: { vmiName },
});

/**
 * A VMI as the controller and a handler leave it: its status written directly (no VMI webhook or controller runs here).
 */
async function vmi(
  custom: CustomObjectsApi,
  namespace: string,
  name: string,
  status: Record<string, unknown>,
): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...group(namespace, "virtualmachineinstances"),
    body: {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name },
      spec: { domain: { devices: {} } },
      status,
    },
  });
}
const migratable = { type: "LiveMigratable", status: "True" };

/** The refusal's status, or "created". */
const attempt = (promise: Promise<unknown>) =>
  promise.then(
    () => "created",
    (e: unknown) =>
      JSON.parse(String((e as { body?: string }).body)) as {
        code: number;
        message: string;
        details?: { causes?: { field: string }[] };
      },
  );

describe("the migration webhook", () => {
  test("admits a migration of a running VMI that can move, one at a time, and refuses the rest, saying why", async ({
    kubeConfig,
    custom,
    namespace,
  }) => {
    await withWebhook(kubeConfig, namespace, MIGRATIONS, async () => {
      const create = (body: unknown) =>
        attempt(custom.createNamespacedCustomObject({ ...group(namespace, "virtualmachineinstancemigrations"), body }));
      await vmi(custom, namespace, "running", { phase: "Running", nodeName: "node-a", conditions: [migratable] });
      await vmi(custom, namespace, "starting", { phase: "Scheduled", conditions: [migratable] });
      await vmi(custom, namespace, "pinned", {
        phase: "Running",
        conditions: [
          {
            type: "LiveMigratable",
            status: "False",
            reason: "DisksNotLiveMigratable",
            message: "cannot migrate VMI: PVC data (volume data) is not shared",
          },
        ],
      });
      await vmi(custom, namespace, "moving", {
        phase: "Running",
        conditions: [migratable],
        migrationState: { migrationUid: "other", targetNode: "node-b" },
      });

      expect(await create(migration("absent", "nothing"))).toMatchObject({
        code: 422,
        message: expect.stringContaining("VMI nothing does not exist") as unknown,
        details: { causes: [{ field: "spec.vmiName" }] },
      });
      expect(await create(migration("starting", "starting"))).toMatchObject({
        code: 422,
        message: expect.stringContaining("is not running (its phase is Scheduled)") as unknown,
      });
      expect(await create(migration("pinned", "pinned"))).toMatchObject({
        code: 422,
        message: expect.stringContaining(
          "not live migratable: DisksNotLiveMigratable: cannot migrate VMI: PVC data",
        ) as unknown,
      });
      expect(await create(migration("moving", "moving"))).toMatchObject({
        code: 422,
        message: expect.stringContaining("already migrating (migration uid other)") as unknown,
      });

      expect(await create(migration("first", "running"))).toBe("created");
      expect(await create(migration("second", "running"))).toMatchObject({
        code: 422,
        message: expect.stringContaining("has a migration in flight already (first, Pending)") as unknown,
      });

      const migrations = group(namespace, "virtualmachineinstancemigrations");
      const changed = await attempt(
        custom.patchNamespacedCustomObject({
          ...migrations,
          name: "first",
          body: [{ op: "replace", path: "/spec/vmiName", value: "pinned" }],
        }),
      );
      expect(changed).toMatchObject({
        code: 422,
        message: expect.stringContaining("a migration's spec cannot change once it is made") as unknown,
      });
      // Its metadata may change (labels, the controller's finalizer).
      expect(
        await attempt(
          custom.patchNamespacedCustomObject({
            ...migrations,
            name: "first",
            body: [{ op: "add", path: "/metadata/labels", value: { team: "a" } }],
          }),
        ),
      ).toBe("created");
    });
  });
});

describe("the pod-eviction webhook, for VMIs that can move", () => {
  test(
    "marks a LiveMigrate VMI that can move for evacuation and refuses with 429; lets " +
      "a LiveMigrateIfPossible one that cannot go",
    async ({ kubeConfig, custom, core, namespace }) => {
      // The API server calls without a client certificate here (no admission configuration): the webhook marks a VMI
      // only off a node being drained, and a drain cordons its node first (eviction-callers.integration.test.ts).
      const node = `${namespace}-drained`;
      await core.createNode({ body: { metadata: { name: node }, spec: { unschedulable: true } } });
      await withWebhook(kubeConfig, namespace, EVICTIONS, async () => {
        const evict = (name: string) =>
          core
            .createNamespacedPodEviction({
              name: `virt-launcher-${name}`,
              namespace,
              body: {
                apiVersion: "policy/v1",
                kind: "Eviction",
                metadata: { name: `virt-launcher-${name}`, namespace },
              },
            })
            .then(
              () => "evicted",
              (e: unknown) => JSON.parse(String((e as { body?: string }).body)) as { code: number; message: string },
            );
        await runningVmi(core, custom, namespace, {
          name: "mover",
          node,
          evictionStrategy: "LiveMigrate",
          canMove: true,
        });
        await runningVmi(core, custom, namespace, {
          name: "stopper",
          node,
          evictionStrategy: "LiveMigrateIfPossible",
          canMove: false,
        });

        expect(await evict("mover")).toMatchObject({
          code: 429,
          message: expect.stringContaining(`Eviction triggered evacuation of VMI ${namespace}/mover`) as unknown,
        });
        expect(await evacuationNodeName(custom, namespace, "mover")).toBe(node);
        expect(await evict("stopper")).toBe("evicted");
        expect(await evacuationNodeName(custom, namespace, "stopper")).toBeUndefined();
      }).finally(() => core.deleteNode({ name: node }));
    },
  );
});
