import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import { CoreV1Api, CustomObjectsApi, KubeConfig, VersionApi } from "@kubernetes/client-node";
import { REPO_ROOT, ensureBinaries } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";

// The chart's admission policies, on a real API server, with the chart's own
// RBAC for the handler and the controller: a handler's token bound to a pod
// on node A updates the status of a VMI on node A, and is refused one on node
// B; only those two accounts change a VMI's status or node label (a VMI has
// no status subresource, as KubeVirt's). And the handler writes its own
// node's heartbeat and CPU labels only: no other node, no other key.

const CHART = join(REPO_ROOT, "charts/kubevirt-ts");
const exec = promisify(execFile);
const release = `kvts-nr-${randomBytes(3).toString("hex")}`;
let kubectl: (stdin: string, ...args: string[]) => Promise<string>;
let rendered: string;

beforeAll(async () => {
  const binDir = await ensureBinaries(["helm"]);
  const admin = new KubeConfig();
  admin.loadFromString(inject("kubeconfig"));
  const kubeVersion = (await admin.makeApiClient(VersionApi).getCode()).gitVersion;
  // The handler's and the controller's accounts and roles, and the policies, as the chart makes them for a release in
  // its own namespace.
  const show = [
    "templates/handler.yaml",
    "templates/controller.yaml",
    "templates/handler-node-restriction.yaml",
    "templates/vmi-status.yaml",
  ].flatMap((t) => ["--show-only", t]);
  const yaml = (
    await exec(
      join(binDir, "helm"),
      ["template", "kubevirt-ts", CHART, "--kube-version", kubeVersion, "--namespace", release, ...show],
      { maxBuffer: 16 << 20 },
    )
  ).stdout;
  rendered = yaml
    .split(/^---$/m)
    .filter((doc) => !/^kind: (DaemonSet|Deployment|Service|PodDisruptionBudget)$/m.test(doc))
    .join("---\n");
  kubectl = (stdin, ...args) =>
    new Promise((resolve, reject) => {
      const child = execFile(
        join(inject("binDir"), "kubectl"),
        [`--kubeconfig=${inject("kubeconfigPath")}`, ...args],
        (error, stdout, stderr) => {
          if (error) reject(new Error(`kubectl ${args.join(" ")}: ${stderr}`));
          else resolve(stdout);
        },
      );
      child.stdin?.end(stdin);
    });
  await kubectl("", "create", "namespace", release);
  await kubectl(rendered, "apply", "-f", "-");
});

afterAll(async () => {
  await kubectl(rendered, "delete", "--ignore-not-found", "-f", "-");
  await kubectl("", "delete", "namespace", release, "--wait=false");
});

interface Vmi {
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string> };
  status?: { nodeName?: string; phase?: string };
}

/** "allowed", or the refusal's code and the API server's message. */
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => "allowed",
    (e: unknown) => {
      const { code, body } = e as { code?: number; body?: unknown };
      const status = (typeof body === "string" ? JSON.parse(body) : body) as { message?: string } | undefined;
      return `${String(code)} ${status?.message ?? ""}`;
    },
  );

/** A client acting as one of the release's service accounts, and its token, bound to a pod when one is given. */
async function accountClient(
  kubeConfig: KubeConfig,
  core: CoreV1Api,
  account: string,
  pod?: { name: string; uid?: string },
): Promise<{ client: CustomObjectsApi; token: string }> {
  const boundObjectRef = pod && { apiVersion: "v1", kind: "Pod", name: pod.name, uid: pod.uid };
  const { status } = await core.createNamespacedServiceAccountToken({
    namespace: release,
    name: account,
    body: { spec: { audiences: [], expirationSeconds: 600, boundObjectRef } },
  });
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster || !status?.token) throw new Error("no cluster in the test kubeconfig, or no token issued");
  const config = new KubeConfig();
  config.loadFromClusterAndUser(cluster, { name: account, token: status.token });
  return { client: config.makeApiClient(CustomObjectsApi), token: status.token };
}

const vmiBody = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name },
  spec: { domain: { devices: {}, resources: { requests: { memory: "64Mi" } } } },
  ...extra,
});

describe("the handlers' node restriction", () => {
  test("lets a handler update its own node's VMIs only, and says why it refuses the others", async ({
    kubeConfig,
    core,
    custom,
    namespace,
  }) => {
    // Nodes and a scheduled handler pod: objects of the API server alone, no kubelet needed.
    for (const node of ["node-a", "node-b"])
      await core.createNode({ body: { metadata: { name: `${release}-${node}` } } }).catch((e: unknown) => {
        if ((e as { code?: number }).code !== 409) throw e;
      });
    const nodeA = `${release}-node-a`;
    const nodeB = `${release}-node-b`;
    await core.createNamespacedPod({
      namespace: release,
      body: {
        metadata: { name: "virt-handler-a" },
        spec: { serviceAccountName: "virt-handler", nodeName: nodeA, containers: [{ name: "c", image: "none" }] },
      },
    });
    const pod = await core.readNamespacedPod({ namespace: release, name: "virt-handler-a" });
    const { client: handler, token: handlerToken } = await accountClient(kubeConfig, core, "virt-handler", {
      name: "virt-handler-a",
      uid: pod.metadata?.uid,
    });
    const { client: controller } = await accountClient(kubeConfig, core, "virt-controller");
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("no cluster in the test kubeconfig");

    // The token names its pod's node: what the policy checks against.
    const review = await kubectl(
      JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token: handlerToken } }),
      "create",
      "-o",
      "json",
      "-f",
      "-",
    );
    expect(
      (JSON.parse(review) as { status: { user: { extra?: Record<string, string[]> } } }).status.user.extra?.[
        "authentication.kubernetes.io/node-name"
      ],
    ).toEqual([nodeA]);

    const vmis = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachineinstances" };
    async function vmiOn(name: string, nodeName: string): Promise<Vmi> {
      await custom.createNamespacedCustomObject({ ...vmis, body: vmiBody(name) });
      const vmi = (await custom.getNamespacedCustomObject({ ...vmis, name })) as Vmi;
      // Handed to its node by the controller, whose writes the policies allow.
      return (await controller.replaceNamespacedCustomObject({
        ...vmis,
        name,
        body: { ...vmi, status: { phase: "Scheduled", nodeName } },
      })) as Vmi;
    }
    const running = (vmi: Vmi, nodeName = vmi.status?.nodeName) => ({
      ...vmi,
      status: { ...vmi.status, nodeName, phase: "Running" },
    });
    const onA = await vmiOn("on-a", nodeA);
    const onB = await vmiOn("on-b", nodeB);
    // The API server applies a new policy within moments: wait for it with a dry run, which changes nothing.
    await expect
      .poll(
        () =>
          refusal(handler.replaceNamespacedCustomObject({ ...vmis, name: "on-b", body: running(onB), dryRun: "All" })),
        { timeout: 30_000 },
      )
      .toMatch(/^403 /);

    const updated = (await handler.replaceNamespacedCustomObject({ ...vmis, name: "on-a", body: running(onA) })) as Vmi;
    expect(updated.status?.phase).toBe("Running");

    const refused = await refusal(handler.replaceNamespacedCustomObject({ ...vmis, name: "on-b", body: running(onB) }));
    expect(refused).toMatch(/^403 /);
    expect(refused).toContain(
      `the handler of node ${nodeA} may only update VMIs whose status.nodeName is ${nodeA} (or that ` +
        `migrate to it); VMI ${namespace}/on-b is on node "${nodeB}"`,
    );
    expect(((await custom.getNamespacedCustomObject({ ...vmis, name: "on-b" })) as Vmi).status?.phase).toBe(
      "Scheduled",
    );

    // Nor may it move its own VMI to another node.
    const moved = await refusal(
      handler.replaceNamespacedCustomObject({ ...vmis, name: "on-a", body: running(updated, nodeB) }),
    );
    expect(moved).toContain(`VMI ${namespace}/on-a is on node "${nodeA}" and the update names node "${nodeB}"`);

    // A token of the handler's account that no pod on a node is behind (say, made by hand) may update nothing.
    const unbound =
      (
        await core.createNamespacedServiceAccountToken({
          namespace: release,
          name: "virt-handler",
          body: { spec: { audiences: [], expirationSeconds: 600 } },
        })
      ).status?.token ?? "";
    const unboundConfig = new KubeConfig();
    unboundConfig.loadFromClusterAndUser(cluster, { name: "virt-handler-unbound", token: unbound });
    const current = (await custom.getNamespacedCustomObject({ ...vmis, name: "on-a" })) as Vmi;
    expect(
      await refusal(
        unboundConfig
          .makeApiClient(CustomObjectsApi)
          .replaceNamespacedCustomObject({ ...vmis, name: "on-a", body: running(current) }),
      ),
    ).toContain("the handler's token is bound to no node");

    // Nor change anything but the status of its own VMI.
    const relabelled = (await custom.getNamespacedCustomObject({ ...vmis, name: "on-a" })) as Vmi;
    expect(
      await refusal(
        handler.replaceNamespacedCustomObject({
          ...vmis,
          name: "on-a",
          body: { ...relabelled, metadata: { ...relabelled.metadata, labels: { app: "x" } } },
        }),
      ),
    ).toContain(
      `the handler of node ${nodeA} may only change the status of VMI ${namespace}/on-a, ` +
        "not its spec, labels, annotations or finalizers",
    );

    // A VMI migrating to node A, labelled so by the controller: A's handler writes the migration's target fields while
    // the VMI is still on node B, and may neither move it nor write one whose migration goes elsewhere.
    const migrating = (await custom.getNamespacedCustomObject({ ...vmis, name: "on-b" })) as Vmi & {
      status: Record<string, unknown>;
    };
    const handedOver = (await controller.replaceNamespacedCustomObject({
      ...vmis,
      name: "on-b",
      body: {
        ...migrating,
        metadata: {
          ...migrating.metadata,
          labels: { ...migrating.metadata.labels, "kubevirt.io/migrationTargetNodeName": nodeA },
        },
        status: { ...migrating.status, migrationState: { migrationUid: "m-1", sourceNode: nodeB, targetNode: nodeA } },
      },
    })) as Vmi & { status: { migrationState: Record<string, unknown> } };
    const targetWrite = (state: Record<string, unknown>, nodeName = nodeB) => ({
      ...handedOver,
      status: { ...handedOver.status, nodeName, migrationState: { ...handedOver.status.migrationState, ...state } },
    });
    const ready = (await handler.replaceNamespacedCustomObject({
      ...vmis,
      name: "on-b",
      body: targetWrite({ targetNodeAddress: "198.18.0.9" }),
    })) as typeof handedOver;
    expect(ready.status.migrationState.targetNodeAddress).toBe("198.18.0.9");
    const taken = await refusal(
      handler.replaceNamespacedCustomObject({
        ...vmis,
        name: "on-b",
        body: { ...targetWrite({}, nodeA), metadata: ready.metadata },
      }),
    );
    expect(taken).toContain(`VMI ${namespace}/on-b is on node "${nodeB}" and the update names node "${nodeA}"`);
    const elsewhere = await refusal(
      handler.replaceNamespacedCustomObject({
        ...vmis,
        name: "on-b",
        body: { ...targetWrite({ targetNode: nodeB }), metadata: ready.metadata },
      }),
    );
    expect(elsewhere).toContain(`may only update VMIs whose status.nodeName is ${nodeA} (or that migrate to it)`);

    // The controller, another account, is not restricted by it.
    const current2 = (await custom.getNamespacedCustomObject({ ...vmis, name: "on-b" })) as Vmi;
    await expect(
      controller.replaceNamespacedCustomObject({ ...vmis, name: "on-b", body: running(current2) }),
    ).resolves.toBeDefined();
    await core.deleteNode({ name: nodeA });
    await core.deleteNode({ name: nodeB });
  });

  test("lets a handler label its own node with kubevirt.io's keys only", async ({ kubeConfig, core }) => {
    const nodeA = `${release}-label-a`;
    const nodeB = `${release}-label-b`;
    for (const name of [nodeA, nodeB])
      await core.createNode({ body: { metadata: { name, labels: { team: "infra" }, annotations: { owner: "ops" } } } });
    await core.createNamespacedPod({
      namespace: release,
      body: {
        metadata: { name: "virt-handler-label-a" },
        spec: { serviceAccountName: "virt-handler", nodeName: nodeA, containers: [{ name: "c", image: "none" }] },
      },
    });
    const pod = await core.readNamespacedPod({ namespace: release, name: "virt-handler-label-a" });
    const { token } = await accountClient(kubeConfig, core, "virt-handler", {
      name: "virt-handler-label-a",
      uid: pod.metadata?.uid,
    });
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("no cluster in the test kubeconfig");
    const config = new KubeConfig();
    config.loadFromClusterAndUser(cluster, { name: "virt-handler-label", token });
    const handler = config.makeApiClient(CoreV1Api);
    const escape = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
    const label = (key: string, value: string) => ({ op: "add", path: `/metadata/labels/${escape(key)}`, value });
    const heartbeat = [
      label("kubevirt.io/schedulable", "true"),
      label("cpu-model.node.kubevirt.io/Westmere", "true"),
      { op: "add", path: "/metadata/annotations/kubevirt.io~1heartbeat", value: "2026-01-02T03:04:05Z" },
    ];
    // The API server applies a new policy within moments: wait for it with a dry run, which changes nothing.
    await expect
      .poll(() => refusal(handler.patchNode({ name: nodeB, body: heartbeat, dryRun: "All" })), { timeout: 30_000 })
      .toMatch(/^403 /);

    const patched = await handler.patchNode({ name: nodeA, body: heartbeat });
    expect(patched.metadata?.labels).toMatchObject({
      "kubevirt.io/schedulable": "true",
      "cpu-model.node.kubevirt.io/Westmere": "true",
      team: "infra",
    });
    expect(patched.metadata?.annotations?.["kubevirt.io/heartbeat"]).toBe("2026-01-02T03:04:05Z");
    // A stale labeller label goes.
    await handler.patchNode({
      name: nodeA,
      body: [{ op: "remove", path: "/metadata/labels/cpu-model.node.kubevirt.io~1Westmere" }],
    });

    const other = await refusal(handler.patchNode({ name: nodeB, body: heartbeat }));
    expect(other).toMatch(/^403 /);
    expect(other).toContain(`the handler of node ${nodeA} may only update its own node, not update node ${nodeB}`);
    const keys =
      `the handler of node ${nodeA} may only change the node's labels and annotations ` +
      "under kubevirt.io/ and *.node.kubevirt.io/";
    expect(await refusal(handler.patchNode({ name: nodeA, body: [label("team", "tenant")] }))).toContain(keys);
    expect(
      await refusal(handler.patchNode({ name: nodeA, body: [label("node-role.kubernetes.io/control-plane", "")] })),
    ).toContain(keys);
    expect(
      await refusal(handler.patchNode({ name: nodeA, body: [{ op: "remove", path: "/metadata/labels/team" }] })),
    ).toContain(keys);
    expect(
      await refusal(handler.patchNode({ name: nodeA, body: [{ op: "remove", path: "/metadata/annotations/owner" }] })),
    ).toContain(keys);
    expect(
      await refusal(
        handler.patchNode({ name: nodeA, body: [{ op: "add", path: "/spec/unschedulable", value: true }] }),
      ),
    ).toContain(
      `the handler of node ${nodeA} may only change the node's kubevirt.io labels and ` +
        "annotations, not its spec, owners or finalizers",
    );
    expect(await refusal(handler.deleteNode({ name: nodeA }))).toMatch(/^403 /);
    const stored = await core.readNode({ name: nodeA });
    expect(stored.metadata?.labels).toMatchObject({ team: "infra", "kubevirt.io/schedulable": "true" });
    expect(stored.metadata?.labels).not.toHaveProperty(["cpu-model.node.kubevirt.io/Westmere"]);
    expect(stored.spec?.unschedulable).toBeUndefined();
    expect((await core.readNode({ name: nodeB })).metadata?.labels).toEqual({ team: "infra" });
    await core.deleteNode({ name: nodeA });
    await core.deleteNode({ name: nodeB });
  });
});

describe("a VMI's status and node label", () => {
  test("are changed by kubevirt-ts's own accounts only, and a user is told why not", async ({
    kubeConfig,
    core,
    custom,
    namespace,
  }) => {
    const vmis = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachineinstances" };
    const { client: controller } = await accountClient(kubeConfig, core, "virt-controller");
    // The API server applies a new policy within moments: wait for it with a dry run, which changes nothing.
    const forged = vmiBody("forged", {
      status: { phase: "Scheduled", nodeName: "node-x", activePods: { "decoy-uid": "node-x" } },
    });
    await expect
      .poll(() => refusal(custom.createNamespacedCustomObject({ ...vmis, body: forged, dryRun: "All" })), {
        timeout: 30_000,
      })
      .toMatch(/^403 /);

    // A user (here the admin) creates a VMI that names a node or a pod: refused, the field and what to do named.
    const created = await refusal(custom.createNamespacedCustomObject({ ...vmis, body: forged }));
    expect(created).toContain(
      "status: a VMI's status is written by kubevirt-ts's controller, handler and virt-api only; " +
        "create the VMI without status, or Pending on no node",
    );
    const labelled = await refusal(
      custom.createNamespacedCustomObject({
        ...vmis,
        body: vmiBody("labelled", { metadata: { name: "labelled", labels: { "kubevirt.io/nodeName": "node-x" } } }),
      }),
    );
    expect(labelled).toContain(
      "metadata.labels[kubevirt.io/nodeName]: the label is kubevirt-ts's, set to the VMI's " +
        "node by its controller; create the VMI without it",
    );
    const targeted = await refusal(
      custom.createNamespacedCustomObject({
        ...vmis,
        body: vmiBody("targeted", {
          metadata: { name: "targeted", labels: { "kubevirt.io/migrationTargetNodeName": "node-x" } },
        }),
      }),
    );
    expect(targeted).toContain(
      "metadata.labels[kubevirt.io/migrationTargetNodeName]: the label is kubevirt-ts's, set by its " +
        "controller to the node a migration takes the VMI to; create the VMI without it",
    );
    await expect(custom.getNamespacedCustomObject({ ...vmis, name: "forged" })).rejects.toMatchObject({ code: 404 });

    // Pending (as virt-api's webhook makes every new VMI) and no status at all are fine.
    await custom.createNamespacedCustomObject({ ...vmis, body: vmiBody("vmi", { status: { phase: "Pending" } }) });
    const vmi = (await custom.getNamespacedCustomObject({ ...vmis, name: "vmi" })) as Vmi;
    expect(vmi.status?.phase).toBe("Pending");

    // The controller hands it to a node, status and label in one write.
    const scheduled = (await controller.replaceNamespacedCustomObject({
      ...vmis,
      name: "vmi",
      body: {
        ...vmi,
        metadata: { ...vmi.metadata, labels: { "kubevirt.io/nodeName": "node-1" } },
        status: { phase: "Scheduled", nodeName: "node-1" },
      },
    })) as Vmi;
    expect(scheduled.status?.nodeName).toBe("node-1");

    // The user may label it, but not move it, nor change its status; what is stored stays.
    const withLabel = (await custom.replaceNamespacedCustomObject({
      ...vmis,
      name: "vmi",
      body: { ...scheduled, metadata: { ...scheduled.metadata, labels: { ...scheduled.metadata.labels, team: "a" } } },
    })) as Vmi;
    expect(withLabel.metadata.labels).toEqual({ "kubevirt.io/nodeName": "node-1", team: "a" });
    const moved = await refusal(
      custom.replaceNamespacedCustomObject({
        ...vmis,
        name: "vmi",
        body: { ...withLabel, status: { ...withLabel.status, nodeName: "node-2" } },
      }),
    );
    expect(moved).toMatch(/^403 /);
    expect(moved).toContain(
      "status: a VMI's status is written by kubevirt-ts's controller, handler and virt-api only; leave status as it is",
    );
    const relabelled = await refusal(
      custom.replaceNamespacedCustomObject({
        ...vmis,
        name: "vmi",
        body: { ...withLabel, metadata: { ...withLabel.metadata, labels: { "kubevirt.io/nodeName": "node-2" } } },
      }),
    );
    expect(relabelled).toContain("metadata.labels[kubevirt.io/nodeName]: the label is kubevirt-ts's");
    await expect(
      kubectl(
        "",
        "patch",
        "-n",
        namespace,
        "virtualmachineinstances.kubevirt.io",
        "vmi",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running"}}',
      ),
    ).rejects.toThrow(
      /Forbidden.*status: a VMI's status is written by kubevirt-ts's controller, handler and virt-api only/,
    );
    const stored = (await custom.getNamespacedCustomObject({ ...vmis, name: "vmi" })) as Vmi;
    expect(stored.status).toEqual({ phase: "Scheduled", nodeName: "node-1" });
    expect(stored.metadata.labels).toEqual({ "kubevirt.io/nodeName": "node-1", team: "a" });
  });
});
