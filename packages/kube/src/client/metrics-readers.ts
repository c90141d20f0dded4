import type { KubeConfig } from "@kubernetes/client-node";
import type { MetricsAccess, MetricsRefusal, ServiceContext } from "@kubevirt-ts/runtime";
import { resources } from "./resources.ts";
import { KubeClient } from "./rest.ts";
import {
  TOKEN_REVIEW_LIMITS,
  type TokenReviewOptions,
  bearer,
  ownClient,
  reviewCache,
  reviewToken,
} from "./token-reviews.ts";
import type { KubeObject } from "./types.ts";

// Who may read a component's /metrics, decided as kube-rbac-proxy decides:
// the caller's bearer token is checked with a TokenReview, and the user it
// names with a SubjectAccessReview for `get` on the non-resource URL
// /metrics (the chart's ClusterRole kubevirt-ts-metrics-reader grants it).
// Decisions are kept and reviews bounded as token-reviews.ts keeps and
// bounds them: a flood of made-up tokens costs the API server a few reviews
// at a time, not one per request.

export const METRICS_READERS_LIMITS = TOKEN_REVIEW_LIMITS;

export const METRICS_READER_ROLE = "kubevirt-ts-metrics-reader";

interface SubjectAccessReview extends KubeObject {
  spec: {
    user?: string;
    uid?: string;
    groups?: string[];
    extra?: Record<string, string[]>;
    nonResourceAttributes: { path: string; verb: string };
  };
  status?: { allowed?: boolean; reason?: string };
}

export type MetricsReadersOptions = TokenReviewOptions;

/**
 * A MetricsAccess for a component: the client (made when first needed) is the component's own, which may create token
 * and access reviews.
 */
export function metricsReaders(client: () => Promise<KubeClient>, options: MetricsReadersOptions = {}): MetricsAccess {
  const own = ownClient(client);
  const decide = reviewCache(
    async (token): Promise<MetricsRefusal | undefined> => {
      const api = await own();
      const user = await reviewToken(api, token);
      if (!user)
        return {
          status: 401,
          reason: "the API server does not accept this token: send a current service-account token",
        };
      const access = await api.create<SubjectAccessReview>(resources.subjectAccessReviews, undefined, {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        metadata: {},
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          nonResourceAttributes: { path: "/metrics", verb: "get" },
        },
      });
      if (access.status?.allowed) return undefined;
      return {
        status: 403,
        reason: `${user.username} may not get /metrics: bind it to the ClusterRole ${METRICS_READER_ROLE}`,
      };
    },
    options,
    (refusal) => refusal?.status !== 401,
  );

  return async (authorization) => {
    const token = bearer(authorization);
    if (token === undefined)
      return {
        status: 401,
        reason:
          "/metrics needs a bearer token in the Authorization header (a service account's, allowed to get /metrics)",
      };
    const pending = decide(token);
    if (pending === "busy")
      return { status: 429, reason: "too many /metrics callers are being checked at once: try again shortly" };
    return pending.catch((error: unknown): MetricsRefusal => ({
      status: 503,
      reason:
        "cannot check the caller with the API server " +
        `now: ${error instanceof Error ? error.message : String(error)}`,
    }));
  };
}

/**
 * A component's metricsAccess (virt-controller, virt-handler, virt-api): metricsReaders with a client of
 * the component's own kubeconfig, or, where the operator turned it off (METRICS_REQUIRE_AUTHORIZATION=false,
 * the chart's metrics.requireAuthorization), anyone, which the log says once at start.
 */
export function componentMetricsAccess(
  kubeConfig: KubeConfig,
  required: boolean,
): (ctx: ServiceContext) => MetricsAccess {
  return ({ log }) => {
    if (required) return metricsReaders(() => KubeClient.fromKubeConfig(kubeConfig));
    log.warn(
      "metrics.requireAuthorization is off (METRICS_REQUIRE_AUTHORIZATION=false): /metrics answers " +
        "anyone who reaches the ops port, and lists every tenant's VMs",
    );
    return () => Promise.resolve(undefined);
  };
}
