"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { type ReactNode, useState } from "react";
import { signOut } from "../../lib/session";
import { useTRPC } from "../../lib/trpc";

// What every signed-in page has: who is signed in, the namespace being
// looked at (kept in the URL, so links and reloads keep it), sign-out.

export function useNamespace(): string {
  return useSearchParams().get("ns") ?? "default";
}

function NamespaceSwitcher() {
  const trpc = useTRPC();
  const namespace = useNamespace();
  const router = useRouter();
  const pathname = usePathname();
  const namespaces = useQuery(trpc.namespaces.queryOptions());
  const [typed, setTyped] = useState(namespace);
  // The same page, of another namespace (a VM's own page has no counterpart there: its namespace's list).
  const page = pathname.startsWith("/vms/new") ? "/vms/new" : pathname.startsWith("/images") ? "/images" : "/vms";
  const go = (ns: string) => { router.push(`${page}?ns=${encodeURIComponent(ns)}`); };
  if (namespaces.data?.mayList) {
    const names = namespaces.data.names.includes(namespace) ? namespaces.data.names : [namespace, ...namespaces.data.names];
    return (
      <label className="inline">
        Namespace{" "}
        <select value={namespace} onChange={(e) => { go(e.target.value); }}>
          {names.map((n) => <option key={n} value={n}>{n}</option>)}
        </select>
      </label>
    );
  }
  // Users who may not list namespaces name theirs.
  return (
    <form className="inline" onSubmit={(e) => { e.preventDefault(); go(typed.trim() || "default"); }}>
      <label htmlFor="namespace-input">Namespace</label>{" "}
      <input id="namespace-input" value={typed} onChange={(e) => { setTyped(e.target.value); }} size={16} />
      <button type="submit" className="secondary">Go</button>
    </form>
  );
}

export function Shell({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  const trpc = useTRPC();
  const router = useRouter();
  const me = useQuery(trpc.whoami.queryOptions());
  const namespace = useNamespace();
  return (
    <main className="wide">
      <nav className="toolbar" aria-label="Dashboard">
        <Link href={`/vms?ns=${encodeURIComponent(namespace)}`}>Virtual machines</Link>
        <Link href={`/images?ns=${encodeURIComponent(namespace)}`}>Images</Link>
        <NamespaceSwitcher />
        <span className="spacer" />
        <span className="muted" aria-label="Signed in as">{me.data?.username ?? (me.error ? "token not accepted" : "…")}</span>
        <button type="button" className="secondary" onClick={() => { signOut(); router.replace("/"); }}>Sign out</button>
      </nav>
      {me.error && <p className="error" role="alert">{me.error.message}</p>}
      <div className="page-header">
        <h1>{title}</h1>
        {actions}
      </div>
      {children}
    </main>
  );
}

/** A button that stays visible when the user may not use it, disabled, with the reason next to it. */
export function ActionButton({ label, allowed, reason, onClick, busy, danger }: { label: string; allowed: boolean | undefined; reason?: string | undefined; onClick: () => void; busy?: boolean; danger?: boolean }) {
  const id = `why-${label.toLowerCase().replace(/[^a-z]+/g, "-")}`;
  return (
    <span className="action">
      <button type="button" className={danger ? "secondary danger" : "secondary"} disabled={allowed !== true || busy} aria-describedby={allowed === false ? id : undefined} title={allowed === false ? reason : undefined} onClick={onClick}>
        {label}
      </button>
      {allowed === false && reason && <span id={id} className="why">{reason}</span>}
    </span>
  );
}
