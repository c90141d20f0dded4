"use client";

import { STATUS_FILTERS, availableActions, matchesStatusFilter, statusInWords } from "@kubevirt-ts/vm-rules";
import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { useMutation, useQueries, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useSearchParams } from "next/navigation";
import { useEffect, useMemo, useRef, useState } from "react";
import { useLiveVms, vmKey } from "../../lib/live";
import { describeError, useTRPC } from "../../lib/trpc";
import { actionAllowed, age, forAnyOf, inEveryNamespace, migrationAvailability } from "../../lib/vm-status";
import { changeLabels, forUpdate, parseLabelChange } from "../../lib/vm-edit";
import { type SortKey, compareRows, matchesSearch, vmSize } from "../../lib/vm-size";
import { useConfirm } from "../ui/confirm";
import { StatusBadge } from "../ui/status-badge";
import { useToast } from "../ui/toasts";
import { ActionButton, Shell, useNamespaceOrAll } from "./shell";

// The VMs of a namespace, or of every namespace, live: searched by name or
// label, filtered by status, sorted by any column, a page at a time, with
// actions on the selected ones. `/` goes to the search.

const PAGE_SIZE = 100;

function useNow(intervalMs = 5_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => {
      setNow(Date.now());
    }, intervalMs);
    return () => {
      clearInterval(timer);
    };
  }, [intervalMs]);
  return now;
}

const NAMESPACE_COLUMN: { key: SortKey; label: string } = { key: "namespace", label: "Namespace" };
const COLUMNS: { key: SortKey; label: string }[] = [
  { key: "name", label: "Name" },
  { key: "status", label: "Status" },
  { key: "node", label: "Node" },
];
const MORE_COLUMNS: { key: SortKey; label: string }[] = [
  { key: "cpu", label: "vCPUs" },
  { key: "memory", label: "Memory" },
  { key: "age", label: "Age" },
];

function SortHeader({
  column,
  sort,
  setSort,
}: {
  column: { key: SortKey; label: string };
  sort: { key: SortKey; descending: boolean };
  setSort: (s: { key: SortKey; descending: boolean }) => void;
}) {
  const active = sort.key === column.key;
  return (
    <th scope="col" aria-sort={active ? (sort.descending ? "descending" : "ascending") : "none"}>
      <button
        type="button"
        className="sort"
        onClick={() => {
          setSort({ key: column.key, descending: active ? !sort.descending : false });
        }}
      >
        {column.label}
        <span aria-hidden="true">{active ? (sort.descending ? " ▼" : " ▲") : ""}</span>
      </button>
    </th>
  );
}

/** The VMs of one namespace, or of every namespace without one (with a Namespace column). */
function VmTable({ namespace }: { namespace: string | undefined }) {
  const trpc = useTRPC();
  const live = useLiveVms(namespace);
  const where = namespace ?? "every namespace";
  const [text, setText] = useState("");
  // The status filter may come with the link (the overview's counts).
  const linked = useSearchParams().get("status") ?? "";
  const [status, setStatus] = useState((STATUS_FILTERS as readonly string[]).includes(linked) ? linked : "");
  const [sort, setSort] = useState<{ key: SortKey; descending: boolean }>({ key: "name", descending: false });
  const [page, setPage] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const toast = useToast();
  const [dialog, confirm] = useConfirm();
  const search = useRef<HTMLInputElement>(null);
  const now = useNow();
  const start = useMutation(trpc.vms.start.mutationOptions());
  const stop = useMutation(trpc.vms.stop.mutationOptions());
  const restart = useMutation(trpc.vms.restart.mutationOptions());
  const pause = useMutation(trpc.vms.pause.mutationOptions());
  const unpause = useMutation(trpc.vms.unpause.mutationOptions());
  const migrate = useMutation(trpc.migrations.migrate.mutationOptions());
  const remove = useMutation(trpc.vms.delete.mutationOptions());
  const update = useMutation(trpc.vms.update.mutationOptions());
  // The label dialog's fields, read when it is confirmed.
  const labelEdit = useRef({ set: "", remove: "" });

  // `/` searches, as in most consoles; not while typing in a field.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (
        e.key !== "/" ||
        e.ctrlKey ||
        e.metaKey ||
        e.altKey ||
        (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) ||
        target?.isContentEditable
      )
        return;
      e.preventDefault();
      search.current?.focus();
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
    };
  }, []);

  const rows = useMemo(() => {
    const list = [...live.vms.values()]
      .filter((vm) => matchesSearch(vm, text) && matchesStatusFilter(vm.status?.printableStatus, status))
      .map((vm) => {
        const key = vmKey(vm.metadata.namespace ?? "", vm.metadata.name ?? "");
        const vmi = live.vmis.get(key);
        return {
          key,
          vm,
          vmi,
          name: vm.metadata.name ?? "",
          namespace: vm.metadata.namespace ?? "",
          status: statusInWords(vm.status?.printableStatus),
          node: vmi?.status?.nodeName ?? "",
          size: vmSize(vm, vmi),
          created: vm.metadata.creationTimestamp ?? "",
        };
      });
    list.sort((a, b) => compareRows(sort.key, a, b) * (sort.descending ? -1 : 1));
    return list;
  }, [live.vms, live.vmis, text, status, sort]);
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  const shownPage = Math.min(page, pages - 1);
  const shown = rows.slice(shownPage * PAGE_SIZE, (shownPage + 1) * PAGE_SIZE);
  // The selection, by vmKey; shown by name in one namespace, by namespace/name across them.
  const chosen = [...selected].filter((key) => live.vms.has(key));
  const shownName = (key: string) => (namespace === undefined ? key : key.slice(key.indexOf("/") + 1));
  const chosenNamespaces = [...new Set(chosen.map((key) => live.vms.get(key)?.metadata.namespace ?? ""))];
  const permissions = useQueries({
    queries: (namespace === undefined ? chosenNamespaces : [namespace]).map((ns) =>
      trpc.permissions.queryOptions({ namespace: ns }),
    ),
  });

  /** One action on each VM ticked: `act` gets its namespace and name, and the VM as the list holds it. */
  async function bulk(
    label: string,
    act: (target: { namespace: string; name: string }, vm: VirtualMachine) => Promise<unknown>,
  ): Promise<void> {
    const keys = [...chosen];
    const names = keys.map(shownName);
    const results = await Promise.allSettled(
      keys.map((key) => {
        const vm = live.vms.get(key);
        if (!vm) return Promise.reject(new Error("it is gone"));
        return act({ namespace: vm.metadata.namespace ?? "", name: vm.metadata.name ?? "" }, vm);
      }),
    );
    const failures = results.flatMap((r, i) =>
      r.status === "rejected" ? [`${names[i] ?? ""}: ${describeError(r.reason).message}`] : [],
    );
    if (failures.length === 0) toast(true, `${label}: done for ${names.join(", ")}.`);
    else toast(false, `${label} failed for ${failures.join("; ")}`);
    if (label === "Delete") setSelected(new Set());
  }
  /** Sets and removes labels of the VMs ticked: each an update of the VM the list holds (a conflict if changed). */
  async function editLabels(): Promise<void> {
    labelEdit.current = { set: "", remove: "" };
    const ok = await confirm({
      title: `Labels of ${one("")}`,
      body: (
        <>
          <p>{chosen.map(shownName).join(", ")}: the labels of each VM (not of its running instance).</p>
          <label className="field">
            Set (key=value, one per line)
            <textarea
              rows={3}
              spellCheck={false}
              onChange={(e) => {
                labelEdit.current.set = e.target.value;
              }}
            />
          </label>
          <label className="field">
            Remove (keys, one per line)
            <textarea
              rows={2}
              spellCheck={false}
              onChange={(e) => {
                labelEdit.current.remove = e.target.value;
              }}
            />
          </label>
        </>
      ),
      confirm: "Apply",
    });
    if (!ok) return;
    const change = parseLabelChange(labelEdit.current.set, labelEdit.current.remove);
    if (change.problems.length > 0) {
      toast(false, `Labels: nothing changed. ${change.problems.join("; ")}.`);
      return;
    }
    await bulk("Labels", (target, vm) =>
      update.mutateAsync({
        ...target,
        vm: forUpdate({ ...vm, metadata: { ...vm.metadata, labels: changeLabels(vm.metadata.labels, change) } }),
      }),
    );
  }
  const one = (what: string) =>
    (chosen.length === 1 ? shownName(chosen[0] ?? "") : `${String(chosen.length)} VMs`) + what;

  // A button for the selection is enabled when the user may, in each namespace of the selection, and the state of any
  // selected VM allows it; a migration, when any selected VM can be migrated now (vm-rules' migrationRefusal).
  const forSelection = (action: "start" | "stop" | "restart" | "pause" | "unpause" | "delete" | "migrate") =>
    actionAllowed(
      inEveryNamespace(permissions.map((p) => p.data?.[action])),
      forAnyOf(
        chosen.flatMap((key) => {
          const vm = live.vms.get(key);
          const vmi = live.vmis.get(key);
          if (!vm) return [];
          return [
            [shownName(key), action === "migrate" ? migrationAvailability(vmi) : availableActions(vm, vmi)[action]],
          ] as const;
        }),
      ),
    );
  const allShownSelected = shown.length > 0 && shown.every((r) => selected.has(r.key));
  return (
    <>
      {dialog}
      <div className="toolbar" role="group" aria-label="Filters and actions">
        <label className="inline">
          Filter by name or label{" "}
          <input
            ref={search}
            type="search"
            value={text}
            placeholder="name, app=web  ( / )"
            onChange={(e) => {
              setText(e.target.value);
              setPage(0);
            }}
          />
        </label>
        <label className="inline">
          Status{" "}
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.target.value);
              setPage(0);
            }}
          >
            <option value="">All</option>
            {STATUS_FILTERS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <span className="spacer" />
        <span className="muted" aria-live="polite" data-testid="list-state">
          {live.error ? "Updates stopped" : live.reconnecting ? "Reconnecting…" : live.loaded ? "Live" : "Loading…"}
        </span>
      </div>
      <div className="toolbar" role="group" aria-label="Selected VMs">
        <span className="muted">{chosen.length} selected</span>
        <ActionButton
          label="Start"
          {...forSelection("start")}
          onClick={() => void bulk("Start", (t) => start.mutateAsync(t))}
        />
        <ActionButton
          label="Stop"
          {...forSelection("stop")}
          onClick={() =>
            void confirm({
              title: `Stop ${one("")}?`,
              body: (
                <p>
                  {chosen.map(shownName).join(", ")}: each guest is asked to shut down, and turned off if it has not
                  after its grace period.
                </p>
              ),
              confirm: `Stop ${one("")}`,
              danger: true,
            }).then((ok) => {
              if (ok) void bulk("Stop", (t) => stop.mutateAsync(t));
            })
          }
        />
        <ActionButton
          label="Restart"
          {...forSelection("restart")}
          onClick={() =>
            void confirm({
              title: `Restart ${one("")}?`,
              body: (
                <p>
                  {chosen.map(shownName).join(", ")}: each guest is shut down and started again on a new instance (it
                  may get another node and address).
                </p>
              ),
              confirm: `Restart ${one("")}`,
              danger: true,
            }).then((ok) => {
              if (ok) void bulk("Restart", (t) => restart.mutateAsync(t));
            })
          }
        />
        <ActionButton
          label="Pause"
          {...forSelection("pause")}
          onClick={() => void bulk("Pause", (t) => pause.mutateAsync(t))}
        />
        <ActionButton
          label="Unpause"
          {...forSelection("unpause")}
          onClick={() => void bulk("Unpause", (t) => unpause.mutateAsync(t))}
        />
        <ActionButton
          label="Migrate"
          {...forSelection("migrate")}
          onClick={() => void bulk("Migrate", (t) => migrate.mutateAsync(t))}
        />
        <ActionButton
          label="Labels…"
          {...actionAllowed(
            inEveryNamespace(permissions.map((p) => p.data?.update)),
            chosen.length > 0 ? { available: true } : undefined,
          )}
          onClick={() => void editLabels()}
        />
        <ActionButton
          label="Delete"
          danger
          {...forSelection("delete")}
          onClick={() =>
            void confirm({
              title: `Delete ${one("")}?`,
              body: (
                <p>
                  {chosen.map(shownName).join(", ")} {chosen.length === 1 ? "is" : "are"} deleted with{" "}
                  {chosen.length === 1 ? "its" : "their"} disks: container disks&apos; changes and{" "}
                  {chosen.length === 1 ? "its" : "their"} own DataVolumes. To keep a VM&apos;s disks, delete it from its
                  page.
                </p>
              ),
              confirm: `Delete ${one("")}`,
              danger: true,
            }).then((ok) => {
              if (ok) void bulk("Delete", (t) => remove.mutateAsync(t));
            })
          }
        />
      </div>
      {live.error !== null && (
        <p className="error" role="alert">
          {describeError(live.error).message}
        </p>
      )}
      <table className="vms">
        <caption className="visually-hidden">Virtual machines in {where}</caption>
        <thead>
          <tr>
            <th scope="col">
              <input
                type="checkbox"
                aria-label="Select every VM on this page"
                checked={allShownSelected}
                onChange={(e) => {
                  const next = new Set(selected);
                  for (const r of shown) {
                    if (e.target.checked) next.add(r.key);
                    else next.delete(r.key);
                  }
                  setSelected(next);
                }}
              />
            </th>
            {(namespace === undefined ? [NAMESPACE_COLUMN, ...COLUMNS] : COLUMNS).map((c) => (
              <SortHeader key={c.key} column={c} sort={sort} setSort={setSort} />
            ))}
            <th scope="col">IP</th>
            {MORE_COLUMNS.map((c) => (
              <SortHeader key={c.key} column={c} sort={sort} setSort={setSort} />
            ))}
          </tr>
        </thead>
        <tbody>
          {shown.map(({ key, vm, vmi, size }) => (
            <Row
              key={key}
              rowKey={key}
              vm={vm}
              vmi={vmi}
              showNamespace={namespace === undefined}
              now={now}
              cpu={size.cpu}
              memory={size.memory}
              selected={selected}
              setSelected={setSelected}
            />
          ))}
        </tbody>
      </table>
      {rows.length > PAGE_SIZE && (
        <nav className="toolbar pager" aria-label="Pages">
          <button
            type="button"
            className="secondary"
            disabled={shownPage === 0}
            onClick={() => {
              setPage(shownPage - 1);
            }}
          >
            Previous
          </button>
          <span data-testid="list-range">
            {`${String(shownPage * PAGE_SIZE + 1)}–` +
              `${String(shownPage * PAGE_SIZE + shown.length)} ` +
              `of ${String(rows.length)}`}
          </span>
          <button
            type="button"
            className="secondary"
            disabled={shownPage >= pages - 1}
            onClick={() => {
              setPage(shownPage + 1);
            }}
          >
            Next
          </button>
        </nav>
      )}
      <p className="muted" data-testid="list-count">
        {live.loaded ? `${String(rows.length)} of ${String(live.vms.size)} VMs` : ""}
      </p>
      {live.loaded && rows.length === 0 && (
        <p className="card">
          {live.vms.size === 0 ? `No virtual machines in ${where} yet.` : "No virtual machine matches the filters."}
        </p>
      )}
    </>
  );
}

function Row({
  rowKey,
  vm,
  vmi,
  showNamespace,
  now,
  cpu,
  memory,
  selected,
  setSelected,
}: {
  rowKey: string;
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  showNamespace: boolean;
  now: number;
  cpu: string;
  memory: string;
  selected: Set<string>;
  setSelected: (s: Set<string>) => void;
}) {
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const ip = vmi?.status?.interfaces?.[0]?.ipAddress ?? "";
  const node = vmi?.status?.nodeName ?? "";
  return (
    <tr>
      <td>
        <input
          type="checkbox"
          aria-label={`Select ${showNamespace ? rowKey : name}`}
          checked={selected.has(rowKey)}
          onChange={(e) => {
            const next = new Set(selected);
            if (e.target.checked) next.add(rowKey);
            else next.delete(rowKey);
            setSelected(next);
          }}
        />
      </td>
      {showNamespace && <td>{namespace}</td>}
      <td>
        <Link
          href={`/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?ns=${encodeURIComponent(namespace)}`}
        >
          {name}
        </Link>
      </td>
      <td>
        <StatusBadge printableStatus={vm.status?.printableStatus} />
      </td>
      <td>
        {node && (
          <Link href={`/nodes?ns=${encodeURIComponent(namespace)}#node-${encodeURIComponent(node)}`}>{node}</Link>
        )}
      </td>
      <td>{ip}</td>
      <td className="number">{cpu}</td>
      <td className="number">{memory}</td>
      <td>{age(vm.metadata.creationTimestamp ?? undefined, now)}</td>
    </tr>
  );
}

export function VirtualMachinesView() {
  const namespace = useNamespaceOrAll();
  const trpc = useTRPC();
  const permissions = useQuery({
    ...trpc.permissions.queryOptions({ namespace: namespace ?? "default" }),
    enabled: namespace !== undefined,
  });
  return (
    <Shell
      title={namespace === undefined ? "Virtual machines in every namespace" : "Virtual machines"}
      actions={
        namespace === undefined ? (
          <ActionButton
            label="Create VM"
            allowed={false}
            reason="Choose the namespace to create it in."
            onClick={() => undefined}
          />
        ) : permissions.data?.create.allowed ? (
          <Link className="button" href={`/vms/new?ns=${encodeURIComponent(namespace)}`}>
            Create VM
          </Link>
        ) : (
          <ActionButton
            label="Create VM"
            allowed={permissions.data ? false : undefined}
            reason={permissions.data?.create.reason}
            onClick={() => undefined}
          />
        )
      }
    >
      <VmTable key={namespace ?? "*"} namespace={namespace} />
    </Shell>
  );
}
