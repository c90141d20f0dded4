"use client";

import type { AppRouter } from "@kubevirt-ts/api/router";
import { TRPC_MAX_BATCH } from "@kubevirt-ts/kubevirt-api";
import { TRPCClientError, createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { EventSource } from "eventsource";
import { signOut } from "./session";

// The API, reached through the dashboard's own origin (its gateway passes
// /trpc/ on to virt-api). Every request carries the token in the
// Authorization header, subscriptions too: their EventSource is one that
// reads the stream with fetch, so it can send headers, and the token never
// goes into a URL (the API refuses one there).

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

/** The client acting as the holder of `token`; `base` is the API's origin, the page's own by default. */
export function makeClient(token: string, base = "") {
  const authorization = `Bearer ${token}`;
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === "subscription",
        true: httpSubscriptionLink({
          url: `${base}/trpc`,
          EventSource,
          eventSourceOptions: () => ({
            fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization } }),
          }),
        }),
        // The API refuses a longer batch: a bigger one (a bulk action on many VMs) goes as several requests.
        false: httpBatchLink({ url: `${base}/trpc`, maxItems: TRPC_MAX_BATCH, headers: () => ({ authorization }) }),
      }),
    ],
  });
}

/**
 * A mutation's callbacks that tell its outcome in a toast: what it did (by default "<what>: asked."), or what was asked
 * and the API's reason for refusing it.
 */
export function toastOutcome<T>(
  toast: (ok: boolean, text: string) => void,
  what: string,
  done: (data: T) => string = () => `${what}: asked.`,
): { onSuccess: (data: T) => void; onError: (error: unknown) => void } {
  return {
    onSuccess: (data) => {
      toast(true, done(data));
    },
    onError: (error) => {
      toast(false, `${what}: ${describeError(error).message}`);
    },
  };
}

/** What the API said went wrong, in words, with the fields it concerns. */
export function describeError(error: unknown): { message: string; causes: { field: string; message: string }[] } {
  const data = (error as { data?: { causes?: { field: string; message: string }[] } } | null)?.data;
  return { message: error instanceof Error ? error.message : String(error), causes: data?.causes ?? [] };
}

/** The cluster refused the token (it is wrong, expired or revoked). */
export function isRefusedToken(error: unknown): boolean {
  return error instanceof TRPCClientError && (error.data as { code?: string } | undefined)?.code === "UNAUTHORIZED";
}

export const TOKEN_REFUSED =
  "The cluster did not accept this token: it is mistyped, expired or revoked. Paste a " +
  "current one, for example from kubectl create token NAME.";
export const SESSION_ENDED =
  "Your session ended: the cluster no longer accepts your token (it expired or was " +
  "revoked). Sign in again with a current one.";

/** Signs out, saying why, when the cluster refused the token mid-session. */
export function endSessionIfRefused(error: unknown): void {
  if (isRefusedToken(error)) signOut(SESSION_ENDED);
}

/** Null when the cluster accepts the token (asked with whoami), else why it cannot be used, in words. */
export async function checkToken(token: string, base = ""): Promise<string | null> {
  try {
    await makeClient(token, base).whoami.query();
    return null;
  } catch (error) {
    if (isRefusedToken(error)) return TOKEN_REFUSED;
    return `The token could not be checked, so you are not signed in: ${describeError(error).message}`;
  }
}
