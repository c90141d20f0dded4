import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readFile } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { Pki } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { describe, expect } from "vitest";
import { pemCertificates } from "../src/client-cert.ts";
import { type StartedWebhooks, evacuationNodeName, runningVmi, startWebhooks } from "./harness.ts";

// Who can make the pod-eviction webhook mark someone's VMI for evacuation:
// forged AdmissionReviews sent straight to the real TLS webhook server (as
// anyone who reaches the virt-api Service can), with and without the API
// server's client CA configured, against VMIs, pods and nodes in the real
// API server.

const log = createLogger({ component: "eviction-callers-test", level: "error" });

/** A LiveMigrate VMI "victim" that can move, running in its launcher pod on `node`, a new Node object, schedulable. */
async function runningOn(core: CoreV1Api, custom: CustomObjectsApi, namespace: string, node: string): Promise<void> {
  await core.createNode({ body: { metadata: { name: node } } });
  // The API server taints a new node not-ready (TaintNodesByCondition) until a kubelet says otherwise: this one is
  // ready.
  await core.patchNode({ name: node, body: [{ op: "add", path: "/spec/taints", value: [] }] });
  await runningVmi(core, custom, namespace, { name: "victim", node, evictionStrategy: "LiveMigrate", canMove: true });
}

const evacuationNode = (custom: CustomObjectsApi, namespace: string) => evacuationNodeName(custom, namespace, "victim");

/**
 * An AdmissionReview for the eviction of the victim's launcher pod, as the API server would send it, sent by the test
 * instead.
 */
function forgeEviction(
  webhooks: StartedWebhooks,
  namespace: string,
  client?: { cert: Buffer; key: Buffer },
): Promise<{ status: number; body: string }> {
  const review = {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: randomUUID(),
      kind: { group: "policy", version: "v1", kind: "Eviction" },
      resource: { group: "", version: "v1", resource: "pods" },
      subResource: "eviction",
      name: "virt-launcher-victim",
      namespace,
      operation: "CREATE",
      dryRun: false,
      object: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "virt-launcher-victim", namespace } },
    },
  };
  return new Promise((resolve, reject) => {
    const req = request(
      `${webhooks.url}/validate-pod-eviction`,
      {
        method: "POST",
        ca: Buffer.from(webhooks.caBundle, "base64"),
        headers: { "content-type": "application/json" },
        ...client,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") });
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(review));
  });
}

describe("the pod-eviction webhook with the API server's client CA configured", () => {
  test(
    "refuses a forged review without the CA's certificate and marks nothing; " +
      "marks over a certificate the CA signed",
    async ({ kubeConfig, core, custom, namespace }) => {
      const dir = await mkdtemp(join(tmpdir(), "webhook-callers-"));
      const apiServerPki = new Pki(join(dir, "api-server"));
      const strangerPki = new Pki(join(dir, "stranger"));
      await Promise.all([mkdir(apiServerPki.dir), mkdir(strangerPki.dir)]);
      await Promise.all([apiServerPki.createCa("webhook-client-ca"), strangerPki.createCa("stranger-ca")]);
      const [apiServerPair, strangerPair] = await Promise.all([
        apiServerPki.issue({ name: "client", commonName: "kube-apiserver-webhook-client", usage: "client" }),
        strangerPki.issue({ name: "client", commonName: "kube-apiserver-webhook-client", usage: "client" }),
      ]);
      const read = async (pair: { cert: string; key: string }) => ({
        cert: await readFile(pair.cert),
        key: await readFile(pair.key),
      });
      const callers = {
        cas: pemCertificates(await readFile(apiServerPki.ca.cert, "utf8")),
        allowedNames: ["kube-apiserver-webhook-client"],
      };
      const webhooks = await startWebhooks(kubeConfig, log, callers);
      const node = `${namespace}-schedulable`;
      try {
        await runningOn(core, custom, namespace, node);

        const nobody = await forgeEviction(webhooks, namespace);
        expect(nobody.status).toBe(401);
        expect(nobody.body).toContain("no client certificate of the API server's webhook client");
        const stranger = await forgeEviction(webhooks, namespace, await read(strangerPair));
        expect(stranger.status).toBe(403);
        expect(stranger.body).toContain("not signed by webhooks.clientCA");
        expect(await evacuationNode(custom, namespace)).toBeUndefined();

        // The API server, verified: KubeVirt's behaviour, the node need not be cordoned.
        const apiServer = await forgeEviction(webhooks, namespace, await read(apiServerPair));
        expect(apiServer.status).toBe(200);
        expect(JSON.parse(apiServer.body)).toMatchObject({
          response: {
            allowed: false,
            status: { code: 429, message: expect.stringContaining("Eviction triggered evacuation") as unknown },
          },
        });
        expect(await evacuationNode(custom, namespace)).toBe(node);
      } finally {
        webhooks.close();
        await core.deleteNode({ name: node });
      }
    },
  );
});

describe("the pod-eviction webhook without a client CA", () => {
  test(
    "a forged review marks nothing while the pod's node is schedulable, and " + "marks once the node is cordoned",
    async ({ kubeConfig, core, custom, namespace }) => {
      const webhooks = await startWebhooks(kubeConfig, log);
      const node = `${namespace}-node`;
      try {
        await runningOn(core, custom, namespace, node);

        const forged = await forgeEviction(webhooks, namespace);
        expect(forged.status).toBe(200);
        // The eviction is still refused (the VMI must not stop), saying why it was not marked.
        expect(JSON.parse(forged.body)).toMatchObject({
          response: {
            allowed: false,
            status: { code: 429, message: expect.stringContaining(`node ${node} is not being drained`) as unknown },
          },
        });
        expect(await evacuationNode(custom, namespace)).toBeUndefined();

        await core.patchNode({ name: node, body: [{ op: "add", path: "/spec/unschedulable", value: true }] });
        const drained = await forgeEviction(webhooks, namespace);
        expect(JSON.parse(drained.body)).toMatchObject({
          response: {
            allowed: false,
            status: { code: 429, message: expect.not.stringContaining("not being drained") as unknown },
          },
        });
        expect(await evacuationNode(custom, namespace)).toBe(node);
      } finally {
        webhooks.close();
        await core.deleteNode({ name: node });
      }
    },
  );
});
