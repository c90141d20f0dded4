// The signed-in state of this browser tab, for client components. Storage
// events only reach other tabs, so changes made here notify subscribers too.
// A session the cluster ends (its token expired or was revoked) leaves the
// reason behind, for the sign-in page to show.
import { useSyncExternalStore } from "react";
import { clearToken, loadToken, saveToken } from "./token";

const signedOutReasonKey = "kubevirt-ts.signed-out-reason";

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  window.addEventListener("storage", listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener("storage", listener);
  };
}

export function signIn(token: string): void {
  saveToken(window.sessionStorage, token);
  window.sessionStorage.removeItem(signedOutReasonKey);
  notify();
}

/** Forgets the token; `reason` says why when it was not the user's choice. */
export function signOut(reason?: string): void {
  clearToken(window.sessionStorage);
  if (reason) window.sessionStorage.setItem(signedOutReasonKey, reason);
  notify();
}

/** Why this tab was last signed out without asking, null when it was not. */
export function useSignedOutReason(): string | null {
  return useSyncExternalStore<string | null>(
    subscribe,
    () => window.sessionStorage.getItem(signedOutReasonKey),
    () => null,
  );
}

/** The token, null when signed out, undefined while not yet known (server render, hydration). */
export function useSessionToken(): string | null | undefined {
  return useSyncExternalStore<string | null | undefined>(
    subscribe,
    () => loadToken(window.sessionStorage),
    () => undefined,
  );
}

function subscribeToNothing(): () => void {
  return () => undefined;
}

/** False during the server render and hydration, true once event handlers are attached. */
export function useHydrated(): boolean {
  return useSyncExternalStore(
    subscribeToNothing,
    () => true,
    () => false,
  );
}
