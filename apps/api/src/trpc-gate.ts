import type { IncomingMessage, ServerResponse } from "node:http";
import { TRPC_ERROR_CODES_BY_KEY, type TRPC_ERROR_CODE_KEY } from "@trpc/server/rpc";
import { type ReviewedUser, TOKEN_REVIEW_LIMITS } from "@kubevirt-ts/kube";
import { bearerToken } from "./console-proxy.ts";
import { limits } from "./limits.ts";
import { SIGN_IN_FIRST } from "./trpc/init.ts";

// What a tRPC request passes before its body is read and any procedure runs
// (issue 30): at most limits.trpcBatchSize procedures named in its path; a
// bearer token the API server accepts (a cached TokenReview with virt-api's
// own account), unless every procedure it names is public; a place within the
// requests in flight, in all and for its caller (the user its token names, so
// many tokens of one user share one user's places), subscriptions (held-open
// SSE streams) counted apart; and room for its body within the bytes of
// bodies being read at once, whoever sends them. A refusal is tRPC's error
// shape, so the dashboard shows its message. What the refused caller still
// sends is read and dropped, never kept, up to limits.trpcBodyBytes (past it
// the connection is cut): a connection closed on a body still arriving is
// reset, and the reset can reach a proxy (the dashboard's gateway) before the
// answer does, which then says 502 instead of the refusal.

export interface TrpcGateOptions {
  /** Procedures anyone may call without a token (the health check). */
  publicProcedures: ReadonlySet<string>;
  /** Whether the procedure named is a subscription. */
  isSubscription: (procedure: string) => boolean;
  /**
   * Who a token is (cached, bounded TokenReviews: @kubevirt-ts/kube's tokenReviews): undefined if no one, "busy" past
   * its reviews under way.
   */
  authenticate: (token: string) => Promise<ReviewedUser | undefined> | "busy";
}

/** Counts of what is in flight: in all, and by caller (an entry only while it has some). */
class InFlight {
  private total = 0;
  private readonly byCaller = new Map<string, number>();
  private readonly max: number;
  private readonly maxPerCaller: number;
  constructor(max: number, maxPerCaller: number) {
    this.max = max;
    this.maxPerCaller = maxPerCaller;
  }

  /** Takes a place for `caller`, or says which bound is reached; the release gives it back once. */
  take(caller: string): (() => void) | "all" | "caller" {
    const own = this.byCaller.get(caller) ?? 0;
    if (this.total >= this.max) return "all";
    if (own >= this.maxPerCaller) return "caller";
    this.total++;
    this.byCaller.set(caller, own + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left === 0) this.byCaller.delete(caller);
      else this.byCaller.set(caller, left);
    };
  }
}

/**
 * Answers with tRPC's error shape (one per procedure of a batch); the rest of the body is dropped as it comes, within a
 * bound.
 */
function refuse(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  code: TRPC_ERROR_CODE_KEY,
  message: string,
  count: number,
  headers: Record<string, string> = {},
): void {
  const error = { error: { message, code: TRPC_ERROR_CODES_BY_KEY[code], data: { code, httpStatus: status } } };
  const batch = new URL(req.url ?? "/", "http://api").searchParams.get("batch") === "1";
  const body = JSON.stringify(
    batch ? Array.from({ length: Math.min(count, limits.trpcBatchSize) }, () => error) : error,
  );
  // Dropped before the answer is written: Node closes a connection whose request is left unread when it answers.
  let dropped = 0;
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > limits.trpcBodyBytes) req.socket.destroy();
  });
  req.resume();
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(body);
}

/** The bytes of request bodies being read at once: a request reserves its declared length before its body is read. */
class BodyBudget {
  private used = 0;
  private readonly max: number;
  constructor(max: number) {
    this.max = max;
  }

  /** Reserves `bytes`, or false past the budget; the release gives them back once. */
  reserve(bytes: number): (() => void) | false {
    if (this.used + bytes > this.max) return false;
    this.used += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= bytes;
    };
  }
}

/**
 * What a request's body may take while it is read: its Content-Length, trpcBodyBytes when chunked, 0 without a body.
 */
function declaredBodyBytes(req: IncomingMessage): number {
  const length = req.headers["content-length"];
  if (length !== undefined) return Number(length);
  return req.headers["transfer-encoding"] ? limits.trpcBodyBytes : 0;
}

const retryAfter = { "retry-after": String(limits.trpcRetryAfterSeconds) };
const RETRY = `Retry after ${String(limits.trpcRetryAfterSeconds)} s.`;

/**
 * The gate in front of tRPC's handler: admit(req, res) resolves true when the request may go on (its place and its
 * body's bytes are given back when its response closes), false when it was answered already (or its client left).
 */
export function createTrpcGate({
  publicProcedures,
  isSubscription,
  authenticate,
}: TrpcGateOptions): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const requests = new InFlight(limits.trpcInFlight, limits.trpcInFlightPerCaller);
  const subscriptions = new InFlight(limits.trpcSubscriptions, limits.trpcSubscriptionsPerCaller);
  const bodies = new BodyBudget(limits.trpcBodyBytesInFlight);
  return async (req, res) => {
    const path = new URL(req.url ?? "/", "http://api").pathname.slice("/trpc/".length);
    const procedures = path.split(",");
    if (procedures.length > limits.trpcBatchSize) {
      refuse(
        req,
        res,
        400,
        "BAD_REQUEST",
        `A request names at most ${String(limits.trpcBatchSize)} procedures; this one ` +
          `names ${String(procedures.length)}: send them as several requests.`,
        1,
      );
      return false;
    }
    const bodyBytes = declaredBodyBytes(req);
    if (bodyBytes > limits.trpcBodyBytes) {
      refuse(
        req,
        res,
        413,
        "PAYLOAD_TOO_LARGE",
        `A request body is at most ${String(limits.trpcBodyBytes)} bytes; this one ` +
          `declares ${String(bodyBytes)}: send less (one VM at a time).`,
        procedures.length,
      );
      return false;
    }
    let caller = `address:${req.socket.remoteAddress ?? ""}`;
    if (!procedures.every((p) => publicProcedures.has(p))) {
      const token = bearerToken(req);
      if (!token) {
        refuse(req, res, 401, "UNAUTHORIZED", SIGN_IN_FIRST, procedures.length);
        return false;
      }
      const reviewing = authenticate(token);
      if (reviewing === "busy") {
        refuse(
          req,
          res,
          429,
          "TOO_MANY_REQUESTS",
          "Too many callers are being signed in at once: the API checks at " +
            `most ${String(TOKEN_REVIEW_LIMITS.maxReviews)} new tokens at a time. ${RETRY}`,
          procedures.length,
          retryAfter,
        );
        return false;
      }
      let user: ReviewedUser | undefined;
      try {
        user = await reviewing;
      } catch (error) {
        refuse(
          req,
          res,
          503,
          "SERVICE_UNAVAILABLE",
          "The API cannot check your token with the Kubernetes API server now " +
            `(${error instanceof Error ? error.message : String(error)}). ${RETRY}`,
          procedures.length,
          retryAfter,
        );
        return false;
      }
      if (!user) {
        refuse(
          req,
          res,
          401,
          "UNAUTHORIZED",
          "The Kubernetes API server does not accept this bearer token (made up, expired or " +
            "revoked): sign in again with a current token.",
          procedures.length,
        );
        return false;
      }
      caller = `user:${user.username}`;
    }
    // The client may have left while its token was reviewed: then nothing is taken.
    if (res.closed || req.socket.destroyed) return false;
    const subscription = procedures.length === 1 && isSubscription(path);
    const taken = (subscription ? subscriptions : requests).take(caller);
    if (typeof taken === "string") {
      const what = subscription ? "subscriptions (live lists)" : "requests";
      const bound = subscription
        ? taken === "all"
          ? limits.trpcSubscriptions
          : limits.trpcSubscriptionsPerCaller
        : taken === "all"
          ? limits.trpcInFlight
          : limits.trpcInFlightPerCaller;
      const whose = taken === "all" ? "the API serves" : "one caller may have";
      refuse(
        req,
        res,
        429,
        "TOO_MANY_REQUESTS",
        `Too many ${what} at once: ${whose} at most ${String(bound)} in flight. ${RETRY}`,
        procedures.length,
        retryAfter,
      );
      return false;
    }
    const reserved = bodies.reserve(bodyBytes);
    if (!reserved) {
      taken();
      refuse(
        req,
        res,
        429,
        "TOO_MANY_REQUESTS",
        `Too many request bodies at once: the API reads at most ${String(limits.trpcBodyBytesInFlight)} ` +
          `bytes of bodies at a time, and this one declares ${String(bodyBytes)}. ${RETRY}`,
        procedures.length,
        retryAfter,
      );
      return false;
    }
    res.once("close", () => {
      taken();
      reserved();
    });
    return true;
  };
}
