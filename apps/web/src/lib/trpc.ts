"use client";

import type { AppRouter } from "@kubevirt-ts/api/router";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";

// The API, reached through the dashboard's own origin (its gateway passes
// /trpc/ on to virt-api). Queries and mutations carry the token in the
// Authorization header; subscriptions (SSE, which cannot send headers) as a
// connection parameter.

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

export function makeClient(token: string) {
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === "subscription",
        true: httpSubscriptionLink({ url: "/trpc", connectionParams: () => ({ token }) }),
        false: httpBatchLink({ url: "/trpc", headers: () => ({ authorization: `Bearer ${token}` }) }),
      }),
    ],
  });
}

/** What the API said went wrong, in words, with the fields it concerns. */
export function describeError(error: unknown): { message: string; causes: { field: string; message: string }[] } {
  const data = (error as { data?: { causes?: { field: string; message: string }[] } } | null)?.data;
  return { message: error instanceof Error ? error.message : String(error), causes: data?.causes ?? [] };
}
