import { once } from "node:events";
import { X509Certificate } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { type Server, createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { AdmissionregistrationV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { Pki, ensureBinaries, startControlPlane } from "@kubevirt-ts/control-plane";
import { expect, test } from "vitest";
import { WEBHOOK_CLIENT_NAME, writeWebhookClient } from "../src/webhook-client.ts";

// cluster-up's admission configuration given to a real kube-apiserver of
// its own: the API server presents the client certificate to the webhook
// the kubeconfig names, signed by the CA cluster-sync hands to the chart.

test("kube-apiserver presents the webhook client certificate cluster-up makes, signed by its CA", async () => {
  const binDir = await ensureBinaries();
  const dir = await mkdtemp(join(tmpdir(), "kubevirt-ts-webhook-client-"));
  // The webhook: a TLS server that asks for a certificate and notes the one it gets.
  const serving = new Pki(join(dir, "serving"));
  await mkdir(serving.dir);
  await serving.createCa("webhook-serving-ca");
  const pair = await serving.issue({ name: "webhook", commonName: "127.0.0.1", hosts: ["127.0.0.1"], usage: "server" });
  const seen: (X509Certificate | undefined)[] = [];
  const webhook: Server = createServer(
    { cert: await readFile(pair.cert), key: await readFile(pair.key), requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      seen.push((req.socket as TLSSocket).getPeerX509Certificate());
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const review = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { request: { uid: string } };
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            apiVersion: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: { uid: review.request.uid, allowed: true },
          }),
        );
      });
    },
  );
  webhook.listen(0, "127.0.0.1");
  await once(webhook, "listening");
  const address = webhook.address();
  const port = typeof address === "object" && address ? address.port : 0;
  // A URL webhook is looked up by host:port, as a Service's is by <name>.<namespace>.svc.
  const flag = await writeWebhookClient(join(dir, "webhook-client"), `127.0.0.1:${String(port)}`);
  const controlPlane = await startControlPlane({ dir: join(dir, "control-plane"), binDir, apiserverArgs: [flag] });
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(controlPlane.kubeconfig);
    await kubeConfig.makeApiClient(AdmissionregistrationV1Api).createValidatingWebhookConfiguration({
      body: {
        metadata: { name: "webhook-client" },
        webhooks: [
          {
            name: "configmaps.webhook-client.kubevirt-ts.io",
            admissionReviewVersions: ["v1"],
            sideEffects: "None",
            failurePolicy: "Fail",
            clientConfig: {
              url: `https://127.0.0.1:${String(port)}/validate`,
              caBundle: (await readFile(serving.ca.cert)).toString("base64"),
            },
            rules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] }],
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "default" } },
          },
        ],
      },
    });
    const core = kubeConfig.makeApiClient(CoreV1Api);
    // The configuration takes a moment to reach the API server's admission chain.
    const deadline = Date.now() + 30_000;
    const called = () => seen.length > 0;
    for (let i = 0; !called() && Date.now() < deadline; i++) {
      await core.createNamespacedConfigMap({
        namespace: "default",
        body: { metadata: { name: `probe-${String(i)}` } },
      });
      if (!called()) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(seen.length).toBeGreaterThan(0);
    const peer = seen[0];
    const ca = new X509Certificate(await readFile(join(dir, "webhook-client", "ca.crt")));
    expect(peer?.subject).toContain(`CN=${WEBHOOK_CLIENT_NAME}`);
    expect(peer?.checkIssued(ca) && peer.verify(ca.publicKey)).toBe(true);
  } finally {
    await controlPlane.stop();
    webhook.close();
    await rm(dir, { recursive: true, force: true });
  }
});
