import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH, NAMESPACE } from "@kubevirt-ts/local-cluster";
import { core } from "../cluster.ts";
import { DASHBOARD_URL, dashboardTls } from "../dashboard.ts";

// The hostile-tenant suite's people and what it watches: a tenant acts with
// its own service account's token only (REST clients and kubectl made from
// it, never the admin's certificate); the components' restart counts are
// read before and after each attack.

/** A tenant: a namespace, its token, and Kubernetes clients and kubectl acting with that token alone. */
export interface Tenant {
  namespace: string;
  token: string;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  kubectl: (...args: string[]) => Promise<string>;
}

export async function tenant(namespace: string, token: string): Promise<Tenant> {
  const admin = new KubeConfig();
  admin.loadFromFile(KUBECONFIG_PATH);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error(`no cluster in ${KUBECONFIG_PATH}`);
  const config = new KubeConfig();
  config.loadFromClusterAndUser(cluster, { name: `${namespace}-tenant`, token });
  // kubectl reads the same configuration from a file of the tenant's own (the admin's would authenticate first).
  const file = join(await mkdtemp(join(tmpdir(), "tenant-")), "kubeconfig");
  await writeFile(file, config.exportConfig(), { mode: 0o600 });
  const bin = join(await ensureBinaries(["kubectl"]), "kubectl");
  return {
    namespace,
    token,
    core: config.makeApiClient(CoreV1Api),
    custom: config.makeApiClient(CustomObjectsApi),
    kubectl: async (...args) =>
      (await promisify(execFile)(bin, [`--kubeconfig=${file}`, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout,
  };
}

/**
 * The components whose restarts every attack is judged by, by their pods' app.kubernetes.io/name label (the chart's).
 */
export const WATCHED = ["virt-controller", "virt-api", "virt-handler"] as const;
export type Watched = (typeof WATCHED)[number];

/** Each watched pod's container restarts, by `<component>/<pod>`. */
export async function restartCounts(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const component of WATCHED) {
    const pods = (
      await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `app.kubernetes.io/name=${component}` })
    ).items;
    for (const pod of pods.filter((p) => !p.metadata?.deletionTimestamp)) {
      counts.set(
        `${component}/${pod.metadata?.name ?? ""}`,
        (pod.status?.containerStatuses ?? []).reduce((sum, c) => sum + c.restartCount, 0),
      );
    }
  }
  return counts;
}

/** Restarts per component between two readings: a container's restarts, and a pod that went (replaced) as one. */
export function restartsBetween(before: Map<string, number>, after: Map<string, number>): Record<Watched, number> {
  const restarts = Object.fromEntries(WATCHED.map((c) => [c, 0])) as Record<Watched, number>;
  for (const [key, count] of before) {
    const component = key.slice(0, key.indexOf("/")) as Watched;
    const now = after.get(key);
    restarts[component] += now === undefined ? 1 : now - count;
  }
  return restarts;
}

export interface Answer {
  status: number;
  /** The body's first 64 KiB. */
  text: string;
  ms: number;
}

/** What of an answer's body is kept: enough for a serial log, bounded. */
const KEPT_BYTES = 1024 * 1024;

/**
 * One request to the dashboard's address (the gateway to virt-api), with the token if any; settles with the answer,
 * or rejects after the timeout. A body goes in 64 KiB pieces, and stops once the server has answered (a server that
 * refuses early may close before reading it all: what it answered counts, not the reset).
 */
export async function toDashboard(
  method: string,
  path: string,
  {
    token,
    body,
    headers = {},
    timeoutMs = 30_000,
  }: { token?: string; body?: Buffer; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Answer> {
  const request = DASHBOARD_URL.startsWith("https:") ? httpsRequest : httpRequest;
  const tls = await dashboardTls();
  const started = Date.now();
  let answered = false;
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, DASHBOARD_URL),
      {
        method,
        ...tls,
        timeout: timeoutMs,
        headers: {
          ...headers,
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body ? { "content-length": String(body.length) } : {}),
        },
      },
      (res) => {
        answered = true;
        let text = "";
        res.setEncoding("utf8").on("data", (c: string) => {
          if (text.length < KEPT_BYTES) text += c;
        });
        // The answer as far as it came: "end", or a connection cut after the headers (which sends no "end").
        const done = () => {
          resolve({ status: res.statusCode ?? 0, text: text.slice(0, KEPT_BYTES), ms: Date.now() - started });
        };
        res.on("end", done).on("close", done).on("error", done);
      },
    );
    req.on("timeout", () =>
      req.destroy(new Error(`${method} ${path.slice(0, 80)} had no answer within ${String(timeoutMs / 1000)} s`)),
    );
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const send = async () => {
      for (let offset = 0; body && offset < body.length && !answered && !req.destroyed; offset += 64 * 1024) {
        if (!req.write(body.subarray(offset, offset + 64 * 1024)))
          await Promise.race([once(req, "drain"), once(req, "close")]);
      }
      if (!answered && !req.destroyed) req.end();
    };
    // An error while sending is the request's: its error handler above settles the answer.
    send().catch(() => undefined);
  });
}

/** A tRPC query as the dashboard sends it (GET, the input in the query string). */
export const trpcQuery = (
  procedure: string,
  input: unknown,
  token: string | undefined,
  timeoutMs?: number,
): Promise<Answer> =>
  toDashboard("GET", `/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { token, timeoutMs });
