import { ApiError, type KubeClient } from "@kubevirt-ts/kube";
import type { Cause } from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { TRPCError, initTRPC } from "@trpc/server";
import type { HandlerDialer } from "../handler-dialer.ts";
import type { GuestImage } from "../env.ts";
import type { VmRates } from "../metrics-store.ts";
import type { UploadTokens } from "../upload/token.ts";

// tRPC for the API: every procedure but health runs as the signed-in user,
// whose bearer token comes with each request in the Authorization header,
// subscriptions included (never in a URL: the server refuses that).
// Kubernetes' answers become errors a person can act on, with the causes of
// a refused object kept so the dashboard can show each next to its field.

export interface ApiServices {
  /**
   * The API's own client: for finding handlers, and for the one write an action needs once the user was authorized for
   * its subresource (vm-actions.ts, ADR 6).
   */
  own: KubeClient;
  handlers: HandlerDialer;
  guestImages: GuestImage[];
  log: Logger;
  /** The VM graphs' figures: the store fed by the handlers, or a Prometheus; absent, the graphs say there are none. */
  metrics?: VmRates;
  /**
   * Signs upload tokens for the dashboard's Images page; absent when the API has no serving key (no upload proxy then).
   */
  uploadTokens?: UploadTokens;
}

export interface Context extends ApiServices {
  token: string | undefined;
}

export class CausesError extends TRPCError {
  readonly causes: Cause[];
  constructor(message: string, causes: Cause[]) {
    super({ code: "BAD_REQUEST", message });
    this.causes = causes;
  }
}

const t = initTRPC.context<Context>().create({
  errorFormatter({ shape, error }) {
    const causes =
      error instanceof CausesError ? error.causes : error.cause instanceof CausesError ? error.cause.causes : undefined;
    return { ...shape, data: { ...shape.data, stack: undefined, causes } };
  },
});

export const router = t.router;
export const publicProcedure = t.procedure;

const CODES: Record<number, TRPCError["code"]> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  410: "CONFLICT",
  422: "UNPROCESSABLE_CONTENT",
  429: "TOO_MANY_REQUESTS",
};

/** Kubernetes' error as the user should read it. */
function fromKubernetes(error: unknown): TRPCError {
  if (error instanceof TRPCError) return error;
  if (!(error instanceof ApiError))
    return new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: error instanceof Error ? error.message : String(error),
      cause: error,
    });
  const { status } = error;
  const message =
    error.code === 401
      ? "Your token was not accepted by the cluster: sign in again with a valid token."
      : (status.message ?? `the cluster answered ${String(error.code)}`);
  const details = (status as { details?: { causes?: { field?: string; message?: string; reason?: string }[] } })
    .details;
  const causes = details?.causes
    ?.filter((c) => c.field)
    .map((c) => ({
      field: c.field ?? "",
      message: c.message ?? "",
      reason: (c.reason ?? "FieldValueInvalid") as Cause["reason"],
    }));
  if (causes && causes.length > 0) return new CausesError(message, causes);
  return new TRPCError({ code: CODES[error.code] ?? "INTERNAL_SERVER_ERROR", message, cause: error });
}

/** What a caller without a token is told (here, and by the gate before a body is read: trpc-gate.ts). */
export const SIGN_IN_FIRST = "Sign in with a Kubernetes bearer token first.";

/** A procedure run as the signed-in user, with a client that carries their token. */
export const userProcedure = t.procedure.use(async ({ ctx, next }) => {
  if (!ctx.token) throw new TRPCError({ code: "UNAUTHORIZED", message: SIGN_IN_FIRST });
  const client = ctx.own.withBearerToken(ctx.token);
  const result = await next({ ctx: { ...ctx, client } });
  if (!result.ok && result.error.cause instanceof ApiError) throw fromKubernetes(result.error.cause);
  return result;
});
