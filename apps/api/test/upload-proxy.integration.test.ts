import { once } from "node:events";
import { type IncomingMessage, type Server, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { KubeClient, type Pod, resources } from "@kubevirt-ts/kube";
import { UPLOAD_SERVER_PORT } from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { createUploadProxyServer } from "../src/server.ts";
import { createUploadProxy } from "../src/upload/proxy.ts";
import { UploadTokens } from "../src/upload/token.ts";

// The upload proxy against the real API server: it finds the claim, its
// upload pod and the pod's key in the DataVolume's Secret with its own
// account, and presents the key to the upload server (here a node:http
// server on the pod's address, 127.0.0.2). A user with Kubernetes' `view`
// rules reads the pod, and finds no key in it, and may not read the Secret.

const POD_IP = "127.0.0.2";
const KEY = "the-upload-key-of-this-pod";
const DV_UID = "0b7d5f1e-8a43-4c55-9e0a-2c8f4d7e1a10";
const owner = (uid: string) => ({ apiVersion: "cdi.kubevirt.io/v1beta1", kind: "DataVolume", name: "disk", uid, controller: true, blockOwnerDeletion: true });

let uploadServer: Server;
const received: { authorization: string | undefined; bytes: number }[] = [];
let proxy: Server;
let proxyUrl = "";
const tokens = UploadTokens.fromServingKey(Buffer.from("a serving key of the test's own"));

beforeAll(async () => {
  uploadServer = createServer((req: IncomingMessage, res) => {
    let bytes = 0;
    req.on("data", (chunk: Buffer) => { bytes += chunk.length; });
    req.on("end", () => {
      received.push({ authorization: req.headers.authorization, bytes });
      res.end();
    });
  });
  uploadServer.listen(UPLOAD_SERVER_PORT, POD_IP);
  await once(uploadServer, "listening");
});

afterAll(async () => {
  for (const server of [uploadServer, proxy]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** POSTs an image of `bytes` bytes to the proxy with a token for namespace/disk; its status and text. */
async function upload(namespace: string, bytes: number): Promise<{ status: number; text: string }> {
  const req = request(`${proxyUrl}/v1beta1/upload`, { method: "POST", headers: { authorization: `Bearer ${tokens.sign({ namespace, pvcName: "disk" })}`, "content-length": String(bytes) } });
  req.end(Buffer.alloc(bytes, 1));
  const [res] = (await once(req, "response")) as [IncomingMessage];
  let text = "";
  for await (const chunk of res) text += String(chunk);
  return { status: res.statusCode ?? 0, text };
}

describe("the upload proxy's key to an upload pod", () => {
  test("comes from the DataVolume's Secret, which a viewer cannot read, and the pod a viewer reads holds none", async ({ kubeConfig, core, namespace }) => {
    const own = await KubeClient.fromKubeConfig(kubeConfig);
    proxy = createUploadProxyServer(createUploadProxy({ own, tokens, log: createLogger({ component: "upload-proxy-test", level: "error" }) }));
    proxy.listen(0, "127.0.0.1");
    await once(proxy, "listening");
    proxyUrl = `http://127.0.0.1:${String((proxy.address() as AddressInfo).port)}`;

    await core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: "disk", annotations: { "cdi.kubevirt.io/storage.upload.target": "" }, ownerReferences: [owner(DV_UID)] }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } } });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: "cdi-upload-disk", ownerReferences: [owner(DV_UID)] },
        spec: { containers: [{ name: "importer", image: "kubevirt-ts.local/importer:1", env: [{ name: "IMPORTER_UPLOAD_KEY", valueFrom: { secretKeyRef: { name: "cdi-upload-disk", key: "uploadKey" } } }] }] },
      },
    });
    // What the kubelet writes of a running, ready pod (the test control plane runs none).
    const pod = await core.readNamespacedPod({ namespace, name: "cdi-upload-disk" });
    await core.replaceNamespacedPodStatus({
      namespace,
      name: "cdi-upload-disk",
      body: { metadata: pod.metadata, spec: pod.spec, status: { phase: "Running", podIP: POD_IP, podIPs: [{ ip: POD_IP }], conditions: [{ type: "Ready", status: "True" }] } },
    });

    // No Secret yet: refused, naming it.
    expect(await upload(namespace, 512)).toEqual({ status: 503, text: expect.stringContaining(`the Secret ${namespace}/cdi-upload-disk`) as string });
    // A Secret the DataVolume does not control (a tenant's, made before the controller's): refused, and the key in it never sent.
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: "cdi-upload-disk" }, data: { uploadKey: Buffer.from("a tenant's key").toString("base64") } } });
    expect((await upload(namespace, 512)).status).toBe(503);
    await core.deleteNamespacedSecret({ namespace, name: "cdi-upload-disk" });

    await core.createNamespacedSecret({ namespace, body: { metadata: { name: "cdi-upload-disk", ownerReferences: [owner(DV_UID)] }, data: { uploadKey: Buffer.from(KEY).toString("base64") } } });
    expect(await upload(namespace, 4096)).toEqual({ status: 200, text: "" });
    expect(received).toEqual([{ authorization: `Bearer ${KEY}`, bytes: 4096 }]);

    // Kubernetes' own `view` role (its core rules, system:aggregate-to-view: the test control plane runs no
    // kube-controller-manager to aggregate them into `view`): the pod, yes, with no key in it; the Secret, no.
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "viewer" } } });
    await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name: "viewer" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:aggregate-to-view" }, subjects: [{ kind: "ServiceAccount", name: "viewer", namespace }] } });
    const token = (await core.createNamespacedServiceAccountToken({ namespace, name: "viewer", body: { spec: { audiences: [], expirationSeconds: 600 } } })).status?.token ?? "";
    const viewer = await KubeClient.fromKubeConfig(viewerConfig(kubeConfig, token));
    // The API server's authorizer learns of the new binding within moments.
    const deadline = Date.now() + 10_000;
    let seen: Pod | undefined;
    while (seen === undefined) {
      seen = await viewer.find<Pod>(resources.pods, namespace, "cdi-upload-disk").catch((error: unknown) => {
        if (Date.now() > deadline) throw error;
        return undefined;
      });
      if (seen === undefined) await sleep(200);
    }
    expect(seen.metadata.name).toBe("cdi-upload-disk");
    expect(JSON.stringify(seen)).not.toContain(KEY);
    await expect(viewer.find(resources.secrets, namespace, "cdi-upload-disk")).rejects.toMatchObject({ code: 403 });
  });
});

/** The test control plane's kubeconfig with the admin's credentials swapped for a bearer token. */
function viewerConfig(admin: KubeConfig, token: string): KubeConfig {
  const config = new KubeConfig();
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("the test kubeconfig names no cluster");
  config.loadFromOptions({ clusters: [cluster], users: [{ name: "viewer", token }], contexts: [{ name: "viewer", cluster: cluster.name, user: "viewer" }], currentContext: "viewer" });
  return config;
}
