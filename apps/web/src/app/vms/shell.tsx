"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { type ReactNode, useEffect, useRef, useState } from "react";
import { signOut } from "../../lib/session";
import { useTRPC } from "../../lib/trpc";

// What every signed-in page has: a sidebar to the dashboard's parts, who is
// signed in, the namespace being looked at (kept in the URL, so links and
// reloads keep it), sign-out, and `?` for the keyboard shortcuts.

/** `?ns=_all`: the VM list of every namespace. No namespace is called that (a DNS label has no underscore). */
export const ALL_NAMESPACES = "_all";

/** The namespace chosen in the URL, or undefined for every namespace. */
export function useNamespaceOrAll(): string | undefined {
  const ns = useSearchParams().get("ns") ?? "default";
  return ns === ALL_NAMESPACES ? undefined : ns;
}

/**
 * The one namespace a page works in: the one chosen, "default" when every namespace is (only the VM list shows them
 * all).
 */
export function useNamespace(): string {
  return useNamespaceOrAll() ?? "default";
}

/** The sections that show every namespace at once, for who may list VMs cluster-wide. */
const ALL_NAMESPACE_PAGES: readonly string[] = ["/overview", "/vms", "/migrations"];

function NamespaceSwitcher() {
  const trpc = useTRPC();
  const namespace = useNamespace();
  const chosen = useNamespaceOrAll() ?? ALL_NAMESPACES;
  const router = useRouter();
  const pathname = usePathname();
  const namespaces = useQuery(trpc.namespaces.queryOptions());
  const [typed, setTyped] = useState(namespace);
  // The same page, of another namespace (a VM's own page has no counterpart there: its namespace's list).
  const page = pathname.startsWith("/vms/new")
    ? "/vms/new"
    : (["/overview", "/images", "/nodes", "/migrations", "/events"].find((p) => pathname.startsWith(p)) ?? "/vms");
  const go = (ns: string) => {
    router.push(`${page}?ns=${encodeURIComponent(ns)}`);
  };
  // Every namespace at once is the overview's and the VM and migration lists', for who may list VMs cluster-wide (a
  // migration list refused there says why).
  const listsAll = ALL_NAMESPACE_PAGES.includes(page);
  const everyNamespace = listsAll && namespaces.data?.mayListVmsEverywhere === true;
  if (namespaces.data?.mayList) {
    const names = namespaces.data.names.includes(namespace)
      ? namespaces.data.names
      : [namespace, ...namespaces.data.names];
    return (
      <label className="inline">
        Namespace{" "}
        <select
          value={listsAll ? chosen : namespace}
          onChange={(e) => {
            go(e.target.value);
          }}
        >
          {everyNamespace && <option value={ALL_NAMESPACES}>All namespaces</option>}
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
    );
  }
  // Users who may not list namespaces name theirs.
  return (
    <form
      className="inline"
      onSubmit={(e) => {
        e.preventDefault();
        go(typed.trim() || "default");
      }}
    >
      <label htmlFor="namespace-input">Namespace</label>{" "}
      <input
        id="namespace-input"
        value={typed}
        onChange={(e) => {
          setTyped(e.target.value);
        }}
        size={16}
      />
      <button type="submit" className="secondary">
        Go
      </button>
    </form>
  );
}

const SECTIONS = [
  { href: "/overview", label: "Overview" },
  { href: "/vms", label: "Virtual machines" },
  { href: "/images", label: "Images and disks" },
  { href: "/nodes", label: "Nodes" },
  { href: "/migrations", label: "Migrations" },
  { href: "/events", label: "Events" },
] as const;

const SHORTCUTS = [
  ["/", "Search the VM list"],
  ["?", "Show these shortcuts"],
  ["g o", "Go to Overview"],
  ["g v", "Go to Virtual machines"],
  ["g i", "Go to Images and disks"],
  ["g n", "Go to Nodes"],
  ["g m", "Go to Migrations"],
  ["g e", "Go to Events"],
  ["Escape", "Close a dialog"],
] as const;

/** `?` opens the shortcuts; `g` then a letter goes to a section. Not while typing in a field. */
function useShortcuts(go: (href: string) => void, help: () => void): void {
  useEffect(() => {
    let pending = false;
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (
        e.ctrlKey ||
        e.metaKey ||
        e.altKey ||
        (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) ||
        target?.isContentEditable ||
        target?.closest(".terminal, .vnc-screen")
      )
        return;
      if (pending) {
        pending = false;
        const href = { o: "/overview", v: "/vms", i: "/images", n: "/nodes", m: "/migrations", e: "/events" }[e.key];
        if (href) go(href);
        return;
      }
      if (e.key === "?") help();
      else if (e.key === "g") pending = true;
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
    };
  }, [go, help]);
}

export function Shell({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const me = useQuery(trpc.whoami.queryOptions());
  const namespace = useNamespace();
  const listed = useNamespaceOrAll() ?? ALL_NAMESPACES;
  const help = useRef<HTMLDialogElement>(null);
  // The overview and the VM and migration lists keep "every namespace"; the other sections work in one.
  const hrefOf = (href: string) =>
    `${href}?ns=${encodeURIComponent(ALL_NAMESPACE_PAGES.includes(href) ? listed : namespace)}`;
  useShortcuts(
    (href) => {
      router.push(hrefOf(href));
    },
    () => {
      help.current?.showModal();
    },
  );
  return (
    <div className="layout">
      <nav className="sidebar" aria-label="Sections">
        <ul>
          {SECTIONS.map((s) => (
            <li key={s.href}>
              <Link href={hrefOf(s.href)} aria-current={pathname.startsWith(s.href) ? "page" : undefined}>
                {s.label}
              </Link>
            </li>
          ))}
        </ul>
        <button
          type="button"
          className="secondary shortcuts"
          onClick={() => {
            help.current?.showModal();
          }}
        >
          Keyboard shortcuts <kbd>?</kbd>
        </button>
      </nav>
      <main className="wide">
        <nav className="toolbar" aria-label="Dashboard">
          <NamespaceSwitcher />
          <span className="spacer" />
          <span className="muted" aria-label="Signed in as">
            {me.data?.username ?? (me.error ? "token not accepted" : "…")}
          </span>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              signOut();
              router.replace("/");
            }}
          >
            Sign out
          </button>
        </nav>
        {me.error && (
          <p className="error" role="alert">
            {me.error.message}
          </p>
        )}
        <div className="page-header">
          <h1>{title}</h1>
          {actions}
        </div>
        {children}
      </main>
      <dialog ref={help} className="card" aria-labelledby="shortcuts-title">
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <table className="vms">
          <tbody>
            {SHORTCUTS.map(([keys, what]) => (
              <tr key={keys}>
                <td>
                  <kbd>{keys}</kbd>
                </td>
                <td>{what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <button
          type="button"
          className="secondary"
          autoFocus
          onClick={() => {
            help.current?.close();
          }}
        >
          Close
        </button>
      </dialog>
    </div>
  );
}

/** A button that stays visible when the user may not use it, disabled, with the reason next to it. */
export function ActionButton({
  label,
  allowed,
  reason,
  onClick,
  busy,
  danger,
  id = `why-${label.toLowerCase().replace(/[^a-z]+/g, "-")}`,
}: {
  label: string;
  allowed: boolean | undefined;
  reason?: string | undefined;
  onClick: () => void;
  busy?: boolean;
  danger?: boolean;
  /** The id of the reason's element: one of its own per button where the same label repeats (a table's rows). */
  id?: string;
}) {
  return (
    <span className="action">
      <button
        type="button"
        className={danger ? "secondary danger" : "secondary"}
        disabled={allowed !== true || busy}
        aria-describedby={allowed === false ? id : undefined}
        title={allowed === false ? reason : undefined}
        onClick={onClick}
      >
        {label}
      </button>
      {allowed === false && reason && (
        <span id={id} className="why">
          {reason}
        </span>
      )}
    </span>
  );
}
