import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { type IncomingMessage, type Server, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import {
  type CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  VersionApi,
  loadYaml,
} from "@kubernetes/client-node";
import { REPO_ROOT, ensureBinaries } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { KubeClient, type Pod, resources } from "@kubevirt-ts/kube";
import { UPLOAD_SERVER_PORT } from "@kubevirt-ts/node-contract";
import { createLogger, deriveUploadKey } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { createUploadProxyServer } from "../src/server.ts";
import { createUploadProxy } from "../src/upload/proxy.ts";
import { UploadTokens } from "../src/upload/token.ts";

// The upload proxy against the real API server, running with virt-api's own
// RBAC as the chart renders it: it finds the claim, its DataVolume and its
// upload pod, derives the pod's key from the master key and the DataVolume's
// uid, and presents it to the upload server (here a node:http server on the
// pod's address, 127.0.0.2, that takes only the key the controller would
// have put in the pod's Secret). virt-api's role reads no Secret; a user with
// Kubernetes' `view` rules reads the pod, the claim and the DataVolume, and
// finds the key in none of them.

const POD_IP = "127.0.0.2";
const MASTER = randomBytes(32);

let uploadServer: Server;
/** The key the upload server takes: the one the controller derived into the pod's Secret. */
let podKey = "";
const received: { authorization: string | undefined; bytes: number }[] = [];
const proxies: Server[] = [];
const tokens = UploadTokens.fromServingKey(Buffer.from("a serving key of the test's own"));
const log = createLogger({ component: "upload-proxy-test", level: "error" });
const exec = promisify(execFile);

beforeAll(async () => {
  uploadServer = createServer((req: IncomingMessage, res) => {
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.on("end", () => {
      received.push({ authorization: req.headers.authorization, bytes });
      res.writeHead(req.headers.authorization === `Bearer ${podKey}` ? 200 : 401);
      res.end();
    });
  });
  uploadServer.listen(UPLOAD_SERVER_PORT, POD_IP);
  await once(uploadServer, "listening");
});

afterAll(async () => {
  for (const server of [uploadServer, ...proxies]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** An upload proxy on a port of its own, as virt-api runs it with `own` and `master`; its URL. */
async function startProxy(own: KubeClient, master: Buffer): Promise<string> {
  const proxy = createUploadProxyServer(createUploadProxy({ own, tokens, uploadMasterKey: master, log }));
  proxies.push(proxy);
  proxy.listen(0, "127.0.0.1");
  await once(proxy, "listening");
  return `http://127.0.0.1:${String((proxy.address() as AddressInfo).port)}`;
}

/** POSTs an image of `bytes` bytes to the proxy at `url` with a token for namespace/disk; its status and text. */
async function upload(url: string, namespace: string, bytes: number): Promise<{ status: number; text: string }> {
  const req = request(`${url}/v1beta1/upload`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${tokens.sign({ namespace, pvcName: "disk" })}`,
      "content-length": String(bytes),
    },
  });
  req.end(Buffer.alloc(bytes, 1));
  const [res] = (await once(req, "response")) as [IncomingMessage];
  let text = "";
  for await (const chunk of res) text += String(chunk);
  return { status: res.statusCode ?? 0, text };
}

/** The chart's RBAC objects, as `helm template` renders them. */
async function chartRbac(
  kubeConfig: KubeConfig,
): Promise<{ clusterRoles: V1ClusterRole[]; clusterRoleBindings: V1ClusterRoleBinding[]; roleRules: unknown[] }> {
  const helm = join(await ensureBinaries(["helm"]), "helm");
  const kubeVersion = (await kubeConfig.makeApiClient(VersionApi).getCode()).gitVersion;
  const { stdout } = await exec(
    helm,
    [
      "template",
      "kubevirt-ts",
      join(REPO_ROOT, "charts/kubevirt-ts"),
      "--kube-version",
      kubeVersion,
      "--namespace",
      "kubevirt-ts",
    ],
    { maxBuffer: 16 << 20 },
  );
  // Only the RBAC documents are parsed (others repeat a label key, which the strict parser refuses).
  const documents = stdout.split(/^---$/m).filter((text) => /^kind: (Cluster)?Role(Binding)?$/m.test(text));
  const objects = documents.map((text) =>
    loadYaml<{
      kind?: string;
      rules?: unknown[];
      subjects?: { kind: string; name: string }[];
      roleRef?: { kind: string; name: string };
      metadata?: { name?: string };
    }>(text),
  );
  const toApi = (binding: (typeof objects)[number]) =>
    binding.subjects?.some((s) => s.kind === "ServiceAccount" && s.name === "virt-api") === true;
  const bindings = objects.filter((o) => (o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding") && toApi(o));
  const named = (kind: string) => new Set(bindings.filter((b) => b.roleRef?.kind === kind).map((b) => b.roleRef?.name));
  return {
    clusterRoles: objects.filter(
      (o) => o.kind === "ClusterRole" && named("ClusterRole").has(o.metadata?.name),
    ) as V1ClusterRole[],
    clusterRoleBindings: bindings.filter((b) => b.kind === "ClusterRoleBinding") as V1ClusterRoleBinding[],
    roleRules: objects
      .filter((o) => o.kind === "Role" && named("Role").has(o.metadata?.name))
      .flatMap((o) => o.rules ?? []),
  };
}

/**
 * A client with a token of the service account `name` in `namespace`, once the API server's authorizer lets it get
 * `probe`.
 */
async function accountClient(
  kubeConfig: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  name: string,
  probe: (client: KubeClient) => Promise<unknown>,
): Promise<KubeClient> {
  const token =
    (
      await core.createNamespacedServiceAccountToken({
        namespace,
        name,
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      })
    ).status?.token ?? "";
  const client = await KubeClient.fromKubeConfig(tokenConfig(kubeConfig, name, token));
  // The API server's authorizer learns of a new binding within moments.
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await probe(client);
      return client;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(200);
    }
  }
}

describe("the upload proxy's key to an upload pod", () => {
  test(
    "is derived from the master key and the DataVolume's uid: virt-api's role has no " +
      "secrets rule, and a viewer finds the key nowhere",
    async ({ kubeConfig, core, custom, namespace }) => {
      // virt-api's RBAC as the chart renders it: no rule names Secrets (or every resource).
      const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      const chart = await chartRbac(kubeConfig);
      expect(chart.clusterRoles.map((r) => r.metadata?.name)).toContain("kubevirt-ts-api-subresources");
      for (const rule of [
        ...chart.clusterRoles.flatMap((r) => r.rules ?? []),
        ...(chart.roleRules as { resources?: string[] }[]),
      ]) {
        expect(rule.resources ?? [], JSON.stringify(rule)).not.toContain("secrets");
        expect(rule.resources ?? [], JSON.stringify(rule)).not.toContain("*");
      }
      // The same ClusterRoles, bound to an account of this test's namespace: the proxy runs as it.
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "virt-api" } } });
      for (const role of chart.clusterRoles) {
        const name = `${namespace}-${role.metadata?.name ?? ""}`;
        await rbac.createClusterRole({ body: { metadata: { name }, rules: role.rules ?? [] } });
        await rbac.createClusterRoleBinding({
          body: {
            metadata: { name },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
            subjects: [{ kind: "ServiceAccount", name: "virt-api", namespace }],
          },
        });
      }
      try {
        const virtApi = await accountClient(kubeConfig, core, namespace, "virt-api", (c) =>
          c.find(resources.persistentVolumeClaims, namespace, "disk"),
        );

        // An upload DataVolume, its claim and its ready upload pod, as the controller and the kubelet make them (the
        // test control plane runs neither), and the pod's Secret with the key the controller derives.
        const dv = (await custom.createNamespacedCustomObject({
          group: "cdi.kubevirt.io",
          version: "v1beta1",
          namespace,
          plural: "datavolumes",
          body: {
            apiVersion: "cdi.kubevirt.io/v1beta1",
            kind: "DataVolume",
            metadata: { name: "disk" },
            spec: { source: { upload: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
          },
        })) as { metadata: { uid: string } };
        podKey = deriveUploadKey(MASTER, dv.metadata.uid);
        const owner = (uid: string) => ({
          apiVersion: "cdi.kubevirt.io/v1beta1",
          kind: "DataVolume",
          name: "disk",
          uid,
          controller: true,
          blockOwnerDeletion: true,
        });
        const claim = {
          metadata: {
            name: "disk",
            annotations: { "cdi.kubevirt.io/storage.upload.target": "" },
            ownerReferences: [owner(dv.metadata.uid)],
          },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        };
        await core.createNamespacedPersistentVolumeClaim({ namespace, body: claim });
        await core.createNamespacedSecret({
          namespace,
          body: {
            metadata: { name: "cdi-upload-disk", ownerReferences: [owner(dv.metadata.uid)] },
            data: { uploadKey: Buffer.from(podKey).toString("base64") },
          },
        });
        await core.createNamespacedPod({
          namespace,
          body: {
            metadata: { name: "cdi-upload-disk", ownerReferences: [owner(dv.metadata.uid)] },
            spec: {
              containers: [
                {
                  name: "importer",
                  image: "kubevirt-ts.local/importer:1",
                  env: [
                    {
                      name: "IMPORTER_UPLOAD_KEY",
                      valueFrom: { secretKeyRef: { name: "cdi-upload-disk", key: "uploadKey" } },
                    },
                  ],
                },
              ],
            },
          },
        });
        const pod = await core.readNamespacedPod({ namespace, name: "cdi-upload-disk" });
        await core.replaceNamespacedPodStatus({
          namespace,
          name: "cdi-upload-disk",
          body: {
            metadata: pod.metadata,
            spec: pod.spec,
            status: {
              phase: "Running",
              podIP: POD_IP,
              podIPs: [{ ip: POD_IP }],
              conditions: [{ type: "Ready", status: "True" }],
            },
          },
        });

        // The right master, with virt-api's role: the image reaches the upload server with the pod's key.
        const proxy = await startProxy(virtApi, MASTER);
        expect(await upload(proxy, namespace, 4096)).toEqual({ status: 200, text: "" });
        expect(received).toEqual([{ authorization: `Bearer ${podKey}`, bytes: 4096 }]);
        // Another master derives another key, which the upload server refuses.
        expect((await upload(await startProxy(virtApi, randomBytes(32)), namespace, 512)).status).toBe(401);
        expect(received.at(-1)?.authorization).not.toBe(`Bearer ${podKey}`);
        // virt-api's account reads no Secret.
        await expect(virtApi.find(resources.secrets, namespace, "cdi-upload-disk")).rejects.toMatchObject({
          code: 403,
        });

        // A claim that names a DataVolume uid other than its DataVolume's (a tenant's trick to have another's key sent
        // to a pod of theirs): refused, and nothing sent.
        const sent = received.length;
        const current = await core.readNamespacedPersistentVolumeClaim({ namespace, name: "disk" });
        if (current.metadata) current.metadata.ownerReferences = [owner("7c1e4a2b-0000-4000-8000-000000000000")];
        await core.replaceNamespacedPersistentVolumeClaim({ namespace, name: "disk", body: current });
        expect(await upload(proxy, namespace, 512)).toEqual({
          status: 409,
          text: expect.stringContaining(`is not controlled by the DataVolume ${namespace}/disk`) as string,
        });
        expect(received.length).toBe(sent);

        // Kubernetes' own `view` role (its core rules, system:aggregate-to-view: the test control plane runs no
        // kube-controller-manager to aggregate them into `view`): the pod, the claim and the DataVolume, with no key in
        // them; the Secret, no.
        await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "viewer" } } });
        await rbac.createNamespacedRoleBinding({
          namespace,
          body: {
            metadata: { name: "viewer" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:aggregate-to-view" },
            subjects: [{ kind: "ServiceAccount", name: "viewer", namespace }],
          },
        });
        const viewer = await accountClient(kubeConfig, core, namespace, "viewer", (c) =>
          c.find(resources.pods, namespace, "cdi-upload-disk"),
        );
        const seen = [
          await viewer.find<Pod>(resources.pods, namespace, "cdi-upload-disk"),
          await viewer.find(resources.persistentVolumeClaims, namespace, "disk"),
        ];
        expect(seen.map((o) => o?.metadata.name)).toEqual(["cdi-upload-disk", "disk"]);
        for (const object of seen) expect(JSON.stringify(object)).not.toContain(podKey);
        // system:aggregate-to-view has no cdi.kubevirt.io rules; the DataVolume, read as the admin, holds no key
        // either.
        expect(
          JSON.stringify(
            await custom.getNamespacedCustomObject({
              group: "cdi.kubevirt.io",
              version: "v1beta1",
              namespace,
              plural: "datavolumes",
              name: "disk",
            }),
          ),
        ).not.toContain(podKey);
        await expect(viewer.find(resources.secrets, namespace, "cdi-upload-disk")).rejects.toMatchObject({ code: 403 });
      } finally {
        for (const role of chart.clusterRoles) {
          const name = `${namespace}-${role.metadata?.name ?? ""}`;
          await rbac.deleteClusterRoleBinding({ name });
          await rbac.deleteClusterRole({ name });
        }
      }
    },
  );
});

/** The test control plane's kubeconfig with the admin's credentials swapped for a bearer token. */
function tokenConfig(admin: KubeConfig, user: string, token: string): KubeConfig {
  const config = new KubeConfig();
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("the test kubeconfig names no cluster");
  config.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  return config;
}
