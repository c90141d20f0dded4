// The signed-in state of this browser tab, for client components. Storage
// events only reach other tabs, so changes made here notify subscribers too.
import { useSyncExternalStore } from "react";
import { clearToken, loadToken, saveToken } from "./token";

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
  notify();
}

export function signOut(): void {
  clearToken(window.sessionStorage);
  notify();
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
