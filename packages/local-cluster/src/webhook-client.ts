import { access, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Pki } from "@kubevirt-ts/control-plane";
import { STATE_DIR } from "./config.ts";
import { log } from "./exec.ts";

// The client certificate kube-apiserver presents to admission webhooks, as
// an operator sets it up (ADR 7): a CA of its own, a certificate it signs,
// and an admission configuration whose kubeconfig gives that certificate to
// calls to virt-api's Service. cluster-sync hands the CA to the chart
// (webhooks.clientCA), and virt-api then answers only those calls.

const DIR = join(STATE_DIR, "pki", "webhook-client");

/** The CA of the API server's webhook client certificate: cluster-up makes it, cluster-sync passes it to helm. */
export const WEBHOOK_CLIENT_CA = join(DIR, "ca.crt");

/** The common name of that certificate, which the chart's webhooks.clientNames allows. */
export const WEBHOOK_CLIENT_NAME = "kube-apiserver-webhook-client";

/**
 * The host name the API server calls a Service's webhook by (port 443 is left out): the kubeconfig's user name for it.
 */
export const serviceWebhookHost = (service: string, namespace: string): string => `${service}.${namespace}.svc`;

/** The admission configuration's kubeconfig: the client certificate for calls to `host`; other webhooks get none. */
export function webhookKubeconfig(host: string, pair: { cert: string; key: string }): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "users:",
    `- name: ${JSON.stringify(host)}`,
    "  user:",
    `    client-certificate: ${JSON.stringify(pair.cert)}`,
    `    client-key: ${JSON.stringify(pair.key)}`,
    "",
  ].join("\n");
}

/** The AdmissionConfiguration giving both webhook plugins that kubeconfig. */
export function admissionConfiguration(kubeconfigPath: string): string {
  const plugin = (name: string) => [
    `- name: ${name}`,
    "  configuration:",
    "    apiVersion: apiserver.config.k8s.io/v1",
    "    kind: WebhookAdmissionConfiguration",
    `    kubeConfigFile: ${JSON.stringify(kubeconfigPath)}`,
  ];
  return [
    "apiVersion: apiserver.config.k8s.io/v1",
    "kind: AdmissionConfiguration",
    "plugins:",
    ...plugin("ValidatingAdmissionWebhook"),
    ...plugin("MutatingAdmissionWebhook"),
    "",
  ].join("\n");
}

/**
 * Makes the CA, the certificate and the files in `dir` for calls to `host`; returns kube-apiserver's flag naming the
 * admission configuration.
 */
export async function writeWebhookClient(dir: string, host: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const pki = new Pki(dir);
  await pki.createCa("kubevirt-ts-webhook-client-ca");
  const pair = await pki.issue({ name: "client", commonName: WEBHOOK_CLIENT_NAME, usage: "client" });
  const kubeconfig = join(dir, "admission.kubeconfig");
  await writeFile(kubeconfig, webhookKubeconfig(host, pair), { mode: 0o600 });
  const config = join(dir, "admission-configuration.yaml");
  await writeFile(config, admissionConfiguration(kubeconfig));
  return `--admission-control-config-file=${config}`;
}

/** cluster-up's: the certificate for calls to `service`'s webhooks, its CA where cluster-sync finds it. */
export const webhookClientSetup = (service: { name: string; namespace: string }): Promise<string> =>
  writeWebhookClient(DIR, serviceWebhookHost(service.name, service.namespace));

/**
 * The helm flags that make virt-api take only that certificate on its webhooks; none for a cluster made before
 * cluster-up set it up, whose webhooks then answer any caller (the drained-node check of ADR 7).
 */
export async function webhookClientValues(): Promise<string[]> {
  const made = await access(WEBHOOK_CLIENT_CA).then(
    () => true,
    () => false,
  );
  if (!made) {
    log(
      `${WEBHOOK_CLIENT_CA} is missing (a cluster from before its admission configuration): virt-api's ` +
        "webhooks will answer any caller; make cluster-up again to have them take only the API server",
    );
    return [];
  }
  return [
    "--set-file",
    `webhooks.clientCA=${WEBHOOK_CLIENT_CA}`,
    "--set-json",
    `webhooks.clientNames=${JSON.stringify([WEBHOOK_CLIENT_NAME])}`,
  ];
}
