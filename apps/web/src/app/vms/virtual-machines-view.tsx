"use client";

import { type VirtualMachine, type VirtualMachineInstance, availableActions } from "@kubevirt-ts/kubevirt-api";
import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useMemo, useState } from "react";
import { useLiveVms } from "../../lib/live";
import { describeError, useTRPC } from "../../lib/trpc";
import { STATUS_FILTERS, actionAllowed, age, forAnyOf, matchesStatusFilter, statusInWords } from "../../lib/vm-status";
import { ActionButton, Shell, useNamespace } from "./shell";

function useNow(intervalMs = 5_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => { setNow(Date.now()); }, intervalMs);
    return () => { clearInterval(timer); };
  }, [intervalMs]);
  return now;
}

function VmTable({ namespace }: { namespace: string }) {
  const trpc = useTRPC();
  const live = useLiveVms(namespace);
  const permissions = useQuery(trpc.permissions.queryOptions({ namespace }));
  const [text, setText] = useState("");
  const [status, setStatus] = useState("");
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [outcome, setOutcome] = useState<string | null>(null);
  const now = useNow();
  const start = useMutation(trpc.vms.start.mutationOptions());
  const stop = useMutation(trpc.vms.stop.mutationOptions());
  const remove = useMutation(trpc.vms.delete.mutationOptions());

  const rows = useMemo(
    () =>
      [...live.vms.values()]
        .filter((vm) => (vm.metadata.name ?? "").includes(text.trim().toLowerCase()) && matchesStatusFilter(vm.status?.printableStatus, status))
        .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""))
        .map((vm) => ({ vm, vmi: live.vmis.get(vm.metadata.name ?? "") })),
    [live.vms, live.vmis, text, status],
  );
  const chosen = [...selected].filter((name) => live.vms.has(name));

  async function bulk(label: string, mutation: typeof start): Promise<void> {
    const results = await Promise.allSettled(chosen.map((name) => mutation.mutateAsync({ namespace, name })));
    const failures = results.flatMap((r, i) => (r.status === "rejected" ? [`${chosen[i] ?? ""}: ${describeError(r.reason).message}`] : []));
    setOutcome(failures.length === 0 ? `${label}: done for ${chosen.join(", ")}.` : `${label} failed for ${failures.join("; ")}`);
    if (label === "Delete") setSelected(new Set());
  }

  const may = permissions.data;
  // A button for the selection is enabled when the user may, and the state of any selected VM allows it.
  const forSelection = (action: "start" | "stop" | "delete") => actionAllowed(may?.[action], forAnyOf(chosen.flatMap((name) => {
    const vm = live.vms.get(name);
    return vm ? [[name, availableActions(vm, live.vmis.get(name))[action]] as const] : [];
  })));
  return (
    <>
      <div className="toolbar" role="group" aria-label="Filters and actions">
        <label className="inline">Filter by name <input type="search" value={text} onChange={(e) => { setText(e.target.value); }} /></label>
        <label className="inline">
          Status{" "}
          <select value={status} onChange={(e) => { setStatus(e.target.value); }}>
            <option value="">All</option>
            {STATUS_FILTERS.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <span className="spacer" />
        <span className="muted" aria-live="polite">{live.error ? "Updates stopped" : live.reconnecting ? "Reconnecting…" : live.loaded ? "Live" : "Loading…"}</span>
      </div>
      <div className="toolbar" role="group" aria-label="Selected VMs">
        <span className="muted">{chosen.length} selected</span>
        <ActionButton label="Start" {...forSelection("start")} onClick={() => void bulk("Start", start)} />
        <ActionButton label="Stop" {...forSelection("stop")} onClick={() => void bulk("Stop", stop)} />
        <ActionButton label="Delete" danger {...forSelection("delete")} onClick={() => { if (window.confirm(`Delete ${chosen.join(", ")}? Their disks go with them: their container disks' changes and their own DataVolumes. To keep a VM's disks, delete it from its page.`)) void bulk("Delete", remove); }} />
      </div>
      {outcome && <p role="status">{outcome}</p>}
      {live.error !== null && <p className="error" role="alert">{describeError(live.error).message}</p>}
      <table className="vms">
        <caption className="visually-hidden">Virtual machines in {namespace}</caption>
        <thead>
          <tr>
            <th scope="col"><span className="visually-hidden">Select</span></th>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Node</th>
            <th scope="col">IP</th>
            <th scope="col">Age</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ vm, vmi }) => <Row key={vm.metadata.name} vm={vm} vmi={vmi} namespace={namespace} now={now} selected={selected} setSelected={setSelected} />)}
        </tbody>
      </table>
      {live.loaded && rows.length === 0 && <p className="card">{live.vms.size === 0 ? `No virtual machines in ${namespace} yet.` : "No virtual machine matches the filters."}</p>}
    </>
  );
}

function Row({ vm, vmi, namespace, now, selected, setSelected }: { vm: VirtualMachine; vmi: VirtualMachineInstance | undefined; namespace: string; now: number; selected: Set<string>; setSelected: (s: Set<string>) => void }) {
  const name = vm.metadata.name ?? "";
  const ip = vmi?.status?.interfaces?.[0]?.ipAddress ?? "";
  return (
    <tr>
      <td>
        <input
          type="checkbox"
          aria-label={`Select ${name}`}
          checked={selected.has(name)}
          onChange={(e) => {
            const next = new Set(selected);
            if (e.target.checked) next.add(name);
            else next.delete(name);
            setSelected(next);
          }}
        />
      </td>
      <td><Link href={`/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?ns=${encodeURIComponent(namespace)}`}>{name}</Link></td>
      <td data-status={vm.status?.printableStatus ?? "Stopped"}>{statusInWords(vm.status?.printableStatus)}</td>
      <td>{vmi?.status?.nodeName ?? ""}</td>
      <td>{ip}</td>
      <td>{age(vm.metadata.creationTimestamp ?? undefined, now)}</td>
    </tr>
  );
}

export function VirtualMachinesView() {
  const namespace = useNamespace();
  const trpc = useTRPC();
  const permissions = useQuery(trpc.permissions.queryOptions({ namespace }));
  return (
    <Shell
      title="Virtual machines"
      actions={
        permissions.data?.create.allowed ? (
          <Link className="button" href={`/vms/new?ns=${encodeURIComponent(namespace)}`}>Create VM</Link>
        ) : (
          <ActionButton label="Create VM" allowed={permissions.data ? false : undefined} reason={permissions.data?.create.reason} onClick={() => undefined} />
        )
      }
    >
      <VmTable key={namespace} namespace={namespace} />
    </Shell>
  );
}
