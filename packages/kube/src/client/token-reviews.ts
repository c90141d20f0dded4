import { createHash } from "node:crypto";
import { resources } from "./resources.ts";
import type { KubeClient } from "./rest.ts";
import type { KubeObject } from "./types.ts";

// Decisions about bearer tokens, made with the component's own account
// (TokenReview, as system:auth-delegator allows) and kept a while: a bounded
// number of them, either way, and a bounded number of reviews under way at
// once, so a flood of made-up tokens costs the API server a few reviews at a
// time, never one per request. /metrics (metrics-readers.ts) and virt-api's
// tRPC gate share this one cache's logic.

export const TOKEN_REVIEW_LIMITS = {
  /** How long a decision (either way) is kept. */
  ttlMs: 60_000,
  /** The most decisions kept of each kind (tokens accepted, tokens refused); the oldest of its kind goes first. */
  maxEntries: 1024,
  /** The most reviews under way at once; a caller beyond them is told to retry (429). */
  maxReviews: 8,
};

export interface TokenReviewOptions {
  ttlMs?: number;
  maxEntries?: number;
  maxReviews?: number;
  now?: () => number;
}

/** Which decisions are a token accepted: they are kept apart, so that made-up tokens push out only each other. */
type Accepted<T> = (decision: T) => boolean;

/** Who a token authenticates as (TokenReview's status.user). */
export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface TokenReview extends KubeObject {
  spec: { token: string };
  status?: { authenticated?: boolean; user?: Partial<ReviewedUser>; error?: string };
}

/** The bearer token of an Authorization header, or undefined. */
export function bearer(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return match?.[1];
}

/** The user the API server says `token` is, or undefined when it does not accept the token. */
export async function reviewToken(api: KubeClient, token: string): Promise<ReviewedUser | undefined> {
  const review = await api.create<TokenReview>(resources.tokenReviews, undefined, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenReview",
    metadata: {},
    spec: { token },
  });
  const user = review.status?.user;
  if (!review.status?.authenticated || !user?.username) return undefined;
  return { ...user, username: user.username };
}

/**
 * A cache of `review`'s decisions by token (kept as its SHA-256, never the token): decide(token) is the kept decision,
 * the review already under way for that token, or a new one; "busy" when maxReviews are under way for other tokens.
 * A review that fails (the API server unreachable) is not kept: its promise rejects, and the next caller asks again.
 */
export function reviewCache<T>(
  review: (token: string) => Promise<T>,
  options: TokenReviewOptions = {},
  accepted: Accepted<T> = () => true,
): (token: string) => Promise<T> | "busy" {
  const { ttlMs, maxEntries, maxReviews } = { ...TOKEN_REVIEW_LIMITS, ...options };
  const now = options.now ?? Date.now;
  // Two bounded maps: a flood of made-up tokens fills the refused ones' and never pushes out a signed-in user's.
  const kinds = {
    accepted: new Map<string, { until: number; decision: T }>(),
    refused: new Map<string, { until: number; decision: T }>(),
  };
  const reviewing = new Map<string, Promise<T>>();
  return (token) => {
    const key = createHash("sha256").update(token).digest("hex");
    const kept = kinds.accepted.get(key) ?? kinds.refused.get(key);
    if (kept && kept.until > now()) return Promise.resolve(kept.decision);
    kinds.accepted.delete(key);
    kinds.refused.delete(key);
    let pending = reviewing.get(key);
    if (!pending) {
      if (reviewing.size >= maxReviews) return "busy";
      pending = review(token)
        .then((decision) => {
          const decided = accepted(decision) ? kinds.accepted : kinds.refused;
          decided.set(key, { until: now() + ttlMs, decision });
          for (const oldest of decided.keys()) {
            if (decided.size <= maxEntries) break;
            decided.delete(oldest);
          }
          return decision;
        })
        .finally(() => reviewing.delete(key));
      reviewing.set(key, pending);
    }
    return pending;
  };
}

/** Cached TokenReviews with the client `client()` gives (made when first needed, made again after it failed). */
export function tokenReviews(
  client: () => Promise<KubeClient>,
  options: TokenReviewOptions = {},
): (token: string) => Promise<ReviewedUser | undefined> | "busy" {
  const own = ownClient(client);
  return reviewCache(
    async (token) => reviewToken(await own(), token),
    options,
    (user) => user !== undefined,
  );
}

/** `client` made once when first needed, and made again after it failed. */
export function ownClient(client: () => Promise<KubeClient>): () => Promise<KubeClient> {
  let own: Promise<KubeClient> | undefined;
  return () =>
    (own ??= client().catch((error: unknown) => {
      own = undefined;
      throw error;
    }));
}
