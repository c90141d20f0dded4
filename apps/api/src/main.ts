import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  Informer,
  KubeClient,
  apiResourceCheck,
  componentMetricsAccess,
  createRestClientMetrics,
  loadKubeConfig,
} from "@kubevirt-ts/kube";
import {
  type KubeVirt,
  LiveClusterConfig,
  defaultClusterConfig,
  followLogVerbosity,
  kubeVirtInformerOptions,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { readUploadMasterKey, runService } from "@kubevirt-ts/runtime";
import { env } from "./env.ts";
import { createSubresourceConsoles } from "./console-proxy.ts";
import { MetricsStore, type VmRates } from "./metrics-store.ts";
import { PrometheusRates } from "./prometheus.ts";
import { HandlerDialer } from "./handler-dialer.ts";
import { type ClientTrust, pemCertificates } from "./client-cert.ts";
import { createApiServer, createUploadProxyServer, createWebhookServer } from "./server.ts";
import { createExportProxy, isExportProxyPath } from "./export-proxy.ts";
import { createUploadProxy } from "./upload/proxy.ts";
import { UploadTokens } from "./upload/token.ts";
import { createUploadTokenApi } from "./upload/token-api.ts";
import { createSubresourceApi } from "./subresources/api.ts";
import { FrontProxy } from "./subresources/front-proxy.ts";

// virt-api: the typed API of the dashboard and of automation (tRPC), the
// console and VNC proxy to the handlers, the admission webhooks, and
// KubeVirt's subresource API behind the Kubernetes API server.

const kubeConfig = loadKubeConfig();

async function readDir(dir: string, names: string[], purpose: string): Promise<Buffer[]> {
  return Promise.all(
    names.map((name) =>
      readFile(join(dir, name)).catch((error: unknown) => {
        throw new Error(`${name} of ${purpose} is missing from ${dir}; the chart mounts it from a Secret it manages`, {
          cause: error,
        });
      }),
    ),
  );
}

/** The API server's webhook client certificate's trust (WEBHOOK_CLIENT_CA_FILE), or undefined: any caller. */
async function webhookCallers(): Promise<ClientTrust | undefined> {
  if (!env.WEBHOOK_CLIENT_CA_FILE) return undefined;
  const pem = await readFile(env.WEBHOOK_CLIENT_CA_FILE, "utf8").catch((error: unknown) => {
    throw new Error(
      `WEBHOOK_CLIENT_CA_FILE ${env.WEBHOOK_CLIENT_CA_FILE ?? ""} cannot be read: set the chart's ` +
        "webhooks.clientCA to the PEM of the CA of the API server's webhook client certificate, or leave it " +
        "empty",
      { cause: error },
    );
  });
  const cas = pemCertificates(pem);
  if (cas.length === 0)
    throw new Error(
      `WEBHOOK_CLIENT_CA_FILE ${env.WEBHOOK_CLIENT_CA_FILE} holds no PEM certificate: set the chart's ` +
        "webhooks.clientCA to the CA's PEM (-----BEGIN CERTIFICATE-----...)",
    );
  return { cas, allowedNames: env.WEBHOOK_CLIENT_NAMES };
}

/**
 * Whether the KubeVirt CR has been read: until then the webhooks would default and decide with the chart's values
 * alone.
 */
let configRead = (): boolean => false;

await runService({
  name: "virt-api",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  checks: () => ({
    apiServer: apiResourceCheck(kubeConfig, kubevirtResources.virtualMachineInstances),
    kubevirtConfig: () =>
      configRead() ? undefined : "the KubeVirt CR (the cluster's configuration) has not been read yet",
  }),
  // /metrics only for a token allowed to get it (the chart's scraper account).
  metricsAccess: componentMetricsAccess(kubeConfig, env.METRICS_REQUIRE_AUTHORIZATION),
  start: async ({ log, registry }) => {
    const own = await KubeClient.fromKubeConfig(kubeConfig, createRestClientMetrics(registry));
    // The cluster's configuration: the chart's values, with the KubeVirt CR over them as it changes.
    const cluster = new LiveClusterConfig(defaultClusterConfig({ evictionStrategy: env.EVICTION_STRATEGY }));
    const following = new AbortController();
    const kvs = new Informer<KubeVirt>({ client: own, ...kubeVirtInformerOptions(env.HANDLER_NAMESPACE), log });
    kvs.addHandler(cluster.informerHandler());
    followLogVerbosity(cluster, "virtAPI", log, env.LOG_LEVEL);
    const followingKubeVirt = kvs.run(following.signal);
    configRead = () => kvs.hasSynced();
    const [ca, cert, key] = await readDir(
      env.CONSOLE_TLS_DIR,
      ["ca.crt", "tls.crt", "tls.key"],
      "the console client certificate (CONSOLE_TLS_DIR)",
    );
    const handlers = new HandlerDialer({
      own,
      namespace: env.HANDLER_NAMESPACE,
      port: env.HANDLER_PORT,
      tls: { ca: ca ?? Buffer.alloc(0), cert: cert ?? Buffer.alloc(0), key: key ?? Buffer.alloc(0) },
    });
    // The serving certificate of the webhooks and the aggregated APIs; its key also signs upload tokens
    // (upload/token.ts).
    const serving = env.WEBHOOK_TLS_DIR
      ? await readDir(
          env.WEBHOOK_TLS_DIR,
          ["tls.crt", "tls.key"],
          "the webhooks' serving certificate (WEBHOOK_TLS_DIR)",
        )
      : undefined;
    const uploadTokens = serving?.[1] ? UploadTokens.fromServingKey(serving[1]) : undefined;
    // The graphs come from the Prometheus named, else from the API's own store, which then samples the handlers.
    const sampling = new AbortController();
    let metrics: VmRates;
    if (env.PROMETHEUS_URL) {
      metrics = new PrometheusRates(env.PROMETHEUS_URL, {
        sampleSeconds: env.METRICS_SAMPLE_SECONDS,
        scrapeSeconds: env.PROMETHEUS_SCRAPE_SECONDS,
      });
    } else {
      const store = new MetricsStore({
        sampleSeconds: env.METRICS_SAMPLE_SECONDS,
        retentionMinutes: env.METRICS_RETENTION_MINUTES,
        maxVmis: env.METRICS_MAX_VMIS,
      });
      store.run(handlers, log, sampling.signal);
      metrics = store;
    }
    const api = createApiServer({
      own,
      handlers,
      guestImages: env.GUEST_IMAGES,
      log,
      metrics,
      ...(uploadTokens ? { uploadTokens } : {}),
    });
    api.listen(env.PORT, env.HOST);
    await once(api, "listening");
    log.info("API listening", { port: env.PORT });
    let webhooks: ReturnType<typeof createWebhookServer> | undefined;
    let uploads: ReturnType<typeof createUploadProxyServer> | undefined;
    if (serving && uploadTokens) {
      const [webhookCert, webhookKey] = serving;
      // One front proxy configuration, read and cached once, for the PUT actions and the console websockets alike.
      const frontProxy = new FrontProxy(own);
      const subresources = createSubresourceApi({ own, handlers, frontProxy, log, version: env.VERSION });
      const tokenApi = createUploadTokenApi({ own, frontProxy, tokens: uploadTokens, log });
      const consoles = createSubresourceConsoles({ own, handlers, frontProxy, log });
      webhooks = createWebhookServer(
        { cert: webhookCert ?? Buffer.alloc(0), key: webhookKey ?? Buffer.alloc(0) },
        own,
        log,
        (req, res) => subresources(req, res) || tokenApi(req, res),
        consoles,
        () => cluster.get(),
        await webhookCallers(),
        env.HANDLER_NAMESPACE,
      );
      webhooks.listen(env.WEBHOOK_PORT, env.HOST);
      await once(webhooks, "listening");
      log.info("admission webhooks, the subresource API and upload tokens listening", { port: env.WEBHOOK_PORT });
      const uploadMasterKey = await readUploadMasterKey(env.UPLOAD_MASTER_KEY_FILE ?? "", "UPLOAD_MASTER_KEY_FILE");
      const uploadProxy = createUploadProxy({ own, tokens: uploadTokens, uploadMasterKey, log });
      // Exports' external links come the same way (the dashboard's address), and take as long as a download.
      const exportProxy = createExportProxy({ own, log });
      uploads = createUploadProxyServer((req, res) => {
        (isExportProxyPath(req.url ?? "/") ? exportProxy : uploadProxy)(req, res);
      });
      uploads.listen(env.UPLOAD_PORT, env.HOST);
      await once(uploads, "listening");
      log.info("upload and export proxy listening", { port: env.UPLOAD_PORT });
    }
    return async () => {
      sampling.abort();
      following.abort();
      await followingKubeVirt;
      for (const server of [api, webhooks, uploads]) server?.closeAllConnections();
      const closing = [api, webhooks, uploads].flatMap((server) =>
        server ? [new Promise((resolve) => server.close(resolve))] : [],
      );
      await Promise.all(closing);
    };
  },
});
