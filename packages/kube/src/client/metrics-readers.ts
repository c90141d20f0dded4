import { createHash } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";
import type { MetricsAccess, MetricsRefusal, ServiceContext } from "@kubevirt-ts/runtime";
import { resources } from "./resources.ts";
import { KubeClient } from "./rest.ts";
import type { KubeObject } from "./types.ts";

// Who may read a component's /metrics, decided as kube-rbac-proxy decides:
// the caller's bearer token is checked with a TokenReview, and the user it
// names with a SubjectAccessReview for `get` on the non-resource URL
// /metrics (the chart's ClusterRole kubevirt-ts-metrics-reader grants it).
// Decisions are kept a while, a bounded number of them, and the reviews in
// flight are bounded too: a flood of made-up tokens costs the API server a
// few reviews at a time, not one per request.

export const METRICS_READERS_LIMITS = {
  /** How long a decision (either way) is kept. */
  ttlMs: 60_000,
  /** The most decisions kept; the oldest goes first. */
  maxEntries: 1024,
  /** The most reviews under way at once; a caller beyond them gets 429. */
  maxReviews: 8,
};

export const METRICS_READER_ROLE = "kubevirt-ts-metrics-reader";

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface TokenReview extends KubeObject {
  spec: { token: string };
  status?: { authenticated?: boolean; user?: UserInfo; error?: string };
}

interface SubjectAccessReview extends KubeObject {
  spec: { user?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]>; nonResourceAttributes: { path: string; verb: string } };
  status?: { allowed?: boolean; reason?: string };
}

/** The bearer token of an Authorization header, or undefined. */
function bearer(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return match?.[1];
}

export interface MetricsReadersOptions {
  ttlMs?: number;
  maxEntries?: number;
  maxReviews?: number;
  now?: () => number;
}

/** A MetricsAccess for a component: the client (made when first needed) is the component's own, which may create token and access reviews. */
export function metricsReaders(client: () => Promise<KubeClient>, options: MetricsReadersOptions = {}): MetricsAccess {
  const { ttlMs, maxEntries, maxReviews } = { ...METRICS_READERS_LIMITS, ...options };
  const now = options.now ?? Date.now;
  const decided = new Map<string, { until: number; refusal: MetricsRefusal | undefined }>();
  const reviewing = new Map<string, Promise<MetricsRefusal | undefined>>();
  let own: Promise<KubeClient> | undefined;

  async function review(token: string): Promise<MetricsRefusal | undefined> {
    own ??= client().catch((error: unknown) => {
      own = undefined;
      throw error;
    });
    const api = await own;
    const tokenReview = await api.create<TokenReview>(resources.tokenReviews, undefined, { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", metadata: {}, spec: { token } });
    const user = tokenReview.status?.user;
    if (!tokenReview.status?.authenticated || !user?.username) return { status: 401, reason: "the API server does not accept this token: send a current service-account token" };
    const access = await api.create<SubjectAccessReview>(resources.subjectAccessReviews, undefined, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path: "/metrics", verb: "get" } },
    });
    if (access.status?.allowed) return undefined;
    return { status: 403, reason: `${user.username} may not get /metrics: bind it to the ClusterRole ${METRICS_READER_ROLE}` };
  }

  return async (authorization) => {
    const token = bearer(authorization);
    if (token === undefined) return { status: 401, reason: "/metrics needs a bearer token in the Authorization header (a service account's, allowed to get /metrics)" };
    const key = createHash("sha256").update(token).digest("hex");
    const kept = decided.get(key);
    if (kept && kept.until > now()) return kept.refusal;
    decided.delete(key);
    let pending = reviewing.get(key);
    if (!pending) {
      if (reviewing.size >= maxReviews) return { status: 429, reason: "too many /metrics callers are being checked at once: try again shortly" };
      pending = review(token)
        .then((refusal) => {
          decided.set(key, { until: now() + ttlMs, refusal });
          for (const oldest of decided.keys()) {
            if (decided.size <= maxEntries) break;
            decided.delete(oldest);
          }
          return refusal;
        })
        .catch((error: unknown): MetricsRefusal => ({ status: 503, reason: `cannot check the caller with the API server now: ${error instanceof Error ? error.message : String(error)}` }))
        .finally(() => reviewing.delete(key));
      reviewing.set(key, pending);
    }
    return pending;
  };
}

/**
 * A component's metricsAccess (virt-controller, virt-handler, virt-api): metricsReaders with a client of
 * the component's own kubeconfig, or, where the operator turned it off (METRICS_REQUIRE_AUTHORIZATION=false,
 * the chart's metrics.requireAuthorization), anyone, which the log says once at start.
 */
export function componentMetricsAccess(kubeConfig: KubeConfig, required: boolean): (ctx: ServiceContext) => MetricsAccess {
  return ({ log }) => {
    if (required) return metricsReaders(() => KubeClient.fromKubeConfig(kubeConfig));
    log.warn("metrics.requireAuthorization is off (METRICS_REQUIRE_AUTHORIZATION=false): /metrics answers anyone who reaches the ops port, and lists every tenant's VMs");
    return () => Promise.resolve(undefined);
  };
}
