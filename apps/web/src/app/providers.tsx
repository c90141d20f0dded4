"use client";

import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { type ReactNode, useEffect, useMemo } from "react";
import { useSessionToken } from "../lib/session";
import { TRPCProvider, endSessionIfRefused, makeClient } from "../lib/trpc";
import { ToastProvider } from "./ui/toasts";

/**
 * The signed-in part of the dashboard: a client acting as the user, or a way
 * back to sign in, also when the cluster stops accepting the token.
 */
export function SignedIn({ children }: { children: ReactNode }) {
  const token = useSessionToken();
  const router = useRouter();
  useEffect(() => {
    if (token === null) router.replace("/");
  }, [token, router]);
  const queryClient = useMemo(
    () =>
      new QueryClient({
        queryCache: new QueryCache({ onError: endSessionIfRefused }),
        mutationCache: new MutationCache({ onError: endSessionIfRefused }),
        defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false } },
      }),
    [],
  );
  const trpcClient = useMemo(() => (token ? makeClient(token) : undefined), [token]);
  if (!token || !trpcClient)
    return (
      <main>
        <p aria-live="polite">Checking your sign-in…</p>
      </main>
    );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <ToastProvider>{children}</ToastProvider>
      </TRPCProvider>
    </QueryClientProvider>
  );
}
