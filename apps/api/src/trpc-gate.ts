import type { IncomingMessage, ServerResponse } from "node:http";
import { TRPC_ERROR_CODES_BY_KEY, type TRPC_ERROR_CODE_KEY } from "@trpc/server/rpc";
import { bearerToken } from "./console-proxy.ts";
import { limits } from "./limits.ts";
import { SIGN_IN_FIRST } from "./trpc/init.ts";

// What a tRPC request passes before its body is read and any procedure runs
// (issue 30): at most limits.trpcBatchSize procedures named in its path; a
// bearer token unless every procedure it names is public; and a place within
// the requests in flight, in all and for its caller, subscriptions (held-open
// SSE streams) counted apart. A refusal is tRPC's error shape, so the
// dashboard shows its message, and closes the connection: what the refused
// caller still sends is never read.

export interface TrpcGateOptions {
  /** Procedures anyone may call without a token (the health check). */
  publicProcedures: ReadonlySet<string>;
  /** Whether the procedure named is a subscription. */
  isSubscription: (procedure: string) => boolean;
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

/** Answers with tRPC's error shape (one per procedure of a batch) and closes the connection, unread. */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, code: TRPC_ERROR_CODE_KEY, message: string, count: number, headers: Record<string, string> = {}): void {
  const error = { error: { message, code: TRPC_ERROR_CODES_BY_KEY[code], data: { code, httpStatus: status } } };
  const batch = new URL(req.url ?? "/", "http://api").searchParams.get("batch") === "1";
  const body = JSON.stringify(batch ? Array.from({ length: Math.min(count, limits.trpcBatchSize) }, () => error) : error);
  res.writeHead(status, { "content-type": "application/json", connection: "close", ...headers }).end(body);
}

/**
 * The gate in front of tRPC's handler: admit(req, res) is true when the request may go on (its place is given back
 * when its response closes), false when it was answered already.
 */
export function createTrpcGate({ publicProcedures, isSubscription }: TrpcGateOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const requests = new InFlight(limits.trpcInFlight, limits.trpcInFlightPerCaller);
  const subscriptions = new InFlight(limits.trpcSubscriptions, limits.trpcSubscriptionsPerCaller);
  return (req, res) => {
    const path = new URL(req.url ?? "/", "http://api").pathname.slice("/trpc/".length);
    const procedures = path.split(",");
    if (procedures.length > limits.trpcBatchSize) {
      refuse(req, res, 400, "BAD_REQUEST", `A request names at most ${String(limits.trpcBatchSize)} procedures; this one names ${String(procedures.length)}: send them as several requests.`, 1);
      return false;
    }
    const token = bearerToken(req);
    if (!token && !procedures.every((p) => publicProcedures.has(p))) {
      refuse(req, res, 401, "UNAUTHORIZED", SIGN_IN_FIRST, procedures.length);
      return false;
    }
    const subscription = procedures.length === 1 && isSubscription(path);
    const taken = (subscription ? subscriptions : requests).take(token ?? `address:${req.socket.remoteAddress ?? ""}`);
    if (typeof taken === "string") {
      const what = subscription ? "subscriptions (live lists)" : "requests";
      const bound = subscription ? (taken === "all" ? limits.trpcSubscriptions : limits.trpcSubscriptionsPerCaller) : taken === "all" ? limits.trpcInFlight : limits.trpcInFlightPerCaller;
      const whose = taken === "all" ? "the API serves" : "one caller may have";
      refuse(req, res, 429, "TOO_MANY_REQUESTS", `Too many ${what} at once: ${whose} at most ${String(bound)} in flight. Retry after ${String(limits.trpcRetryAfterSeconds)} s.`, procedures.length, { "retry-after": String(limits.trpcRetryAfterSeconds) });
      return false;
    }
    res.once("close", taken);
    return true;
  };
}
