import type { V1Pod } from "@kubernetes/client-node";
import { NAMESPACE } from "@kubevirt-ts/local-cluster";
import { core } from "./cluster.ts";

// Reading a component's /metrics as the chart's Prometheus does: with the
// token of the scraper account (charts/kubevirt-ts/templates/metrics-reader.yaml,
// the only account the chart lets get /metrics), from the pod's own address on
// its ops port, plain HTTP (packages/runtime's ops server). Not through the
// API server's pod proxy (`kubectl get --raw .../pods/<pod>:<port>/proxy/metrics`):
// the API server removes the caller's Authorization header once it has
// authenticated the caller, so the component would see no token and refuse.
// The suites run on the node, where pod addresses are routed.

/** The ops port of each component whose /metrics is kept to allowed callers (the chart's containers' OPS_PORT). */
export const OPS_PORTS = { "virt-controller": 9100, "virt-handler": 9101, "virt-api": 9103 } as const;
export type MetricsComponent = keyof typeof OPS_PORTS;

/** The scraper account's token Secret, the one the ServiceMonitor sends. */
export const SCRAPER_TOKEN_SECRET = "kubevirt-ts-metrics-scraper-token";

let token: Promise<string> | undefined;

async function readScraperToken(): Promise<string> {
  const secret = await core.readNamespacedSecret({ name: SCRAPER_TOKEN_SECRET, namespace: NAMESPACE });
  const data = secret.data?.token;
  if (!data)
    throw new Error(
      `the Secret ${NAMESPACE}/${SCRAPER_TOKEN_SECRET} holds no token: the API server's token controller ` +
        "fills it for the account kubevirt-ts-metrics-scraper; see that the chart installed both",
    );
  return Buffer.from(data, "base64").toString("utf8");
}

/** The scraper account's token, read once (again after a failed read). */
export function scraperToken(): Promise<string> {
  token ??= readScraperToken().catch((error: unknown) => {
    token = undefined;
    throw error;
  });
  return token;
}

/**
 * A component pod's /metrics text, read with the scraper's token; any answer but 200 throws, naming the pod and the
 * answer.
 */
export async function podMetrics(pod: V1Pod, component: MetricsComponent): Promise<string> {
  const name = pod.metadata?.name ?? "";
  const ip = pod.status?.podIP;
  if (!ip) throw new Error(`${component} pod ${name} has no pod IP yet: read its /metrics once it runs`);
  const res = await fetch(`http://${ip}:${String(OPS_PORTS[component])}/metrics`, {
    headers: { authorization: `Bearer ${await scraperToken()}` },
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (!res.ok)
    throw new Error(`${component} pod ${name}'s /metrics answered ${String(res.status)}: ${text.slice(0, 300)}`);
  return text;
}
