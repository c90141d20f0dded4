"use client";

import { STATUS_FILTERS, matchesStatusFilter } from "@kubevirt-ts/vm-rules";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useLiveVms } from "../../lib/live";
import { describeError, useTRPC } from "../../lib/trpc";
import { CpuMeter, MemoryMeter, cores, gib } from "../ui/meter";
import { ALL_NAMESPACES, Shell, useNamespace, useNamespaceOrAll } from "../vms/shell";

// The cluster at a glance, as far as the user may see it: the VMs by status
// (of the namespace, or of every namespace), each count linked to the list
// filtered by it; the nodes with what their pods request of what they can
// give; the migrations in flight; the namespace's newest warnings.

/** The most warnings the overview lists: the Events page has the rest. */
const WARNINGS = 8;

export function OverviewView() {
  const trpc = useTRPC();
  const listed = useNamespaceOrAll();
  const namespace = useNamespace();
  const where = listed ?? "every namespace";
  const live = useLiveVms(listed);
  const nodes = useQuery({ ...trpc.nodes.queryOptions({ namespace }), refetchInterval: 10_000 });
  const migrations = useQuery({
    ...trpc.migrations.all.queryOptions(listed === undefined ? {} : { namespace: listed }),
    refetchInterval: 5_000,
  });
  const events = useQuery({ ...trpc.events.queryOptions({ namespace }), refetchInterval: 10_000 });
  const vms = [...live.vms.values()];
  const listHref = (status: string) =>
    `/vms?ns=${encodeURIComponent(listed ?? ALL_NAMESPACES)}${status ? `&status=${encodeURIComponent(status)}` : ""}`;
  const flying = (migrations.data?.migrations ?? []).filter((m) => !m.ended);
  const warnings = (events.data ?? []).filter((e) => e.type === "Warning").slice(0, WARNINGS);
  return (
    <Shell title="Overview">
      <section aria-label="Virtual machines" className="card">
        <h2>Virtual machines in {where}</h2>
        {live.error !== null && (
          <p className="error" role="alert">
            {describeError(live.error).message}
          </p>
        )}
        {!live.loaded ? (
          <p aria-live="polite">Loading…</p>
        ) : (
          <ul className="counts" data-testid="vm-counts">
            <li>
              <Link href={listHref("")}>
                <strong data-testid="count-all">{vms.length}</strong> in all
              </Link>
            </li>
            {STATUS_FILTERS.map((status) => (
              <li key={status} data-status={status}>
                <Link href={listHref(status)}>
                  <strong data-testid={`count-${status}`}>
                    {vms.filter((vm) => matchesStatusFilter(vm.status?.printableStatus, status)).length}
                  </strong>{" "}
                  {status}
                </Link>
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-label="Nodes" className="card">
        <h2>Nodes</h2>
        {nodes.error && <p className="error">{describeError(nodes.error).message}</p>}
        <table className="vms" data-testid="overview-nodes">
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Ready</th>
              <th scope="col">CPU</th>
              <th scope="col">Memory</th>
              <th scope="col">VMs</th>
            </tr>
          </thead>
          <tbody>
            {(nodes.data?.nodes ?? []).map((n) => (
              <tr key={n.name}>
                <td>
                  <Link href={`/nodes?ns=${encodeURIComponent(namespace)}#node-${encodeURIComponent(n.name)}`}>
                    {n.name}
                  </Link>
                </td>
                <td>{n.ready ? "yes" : "no"}</td>
                <td>
                  {n.requested ? (
                    <CpuMeter used={n.requested.cpu} total={n.allocatable.cpu} />
                  ) : (
                    `${cores(n.allocatable.cpu)} cores for pods`
                  )}
                </td>
                <td>
                  {n.requested ? (
                    <MemoryMeter used={n.requested.memory} total={n.allocatable.memory} />
                  ) : (
                    `${gib(n.allocatable.memory)} for pods`
                  )}
                </td>
                <td>{n.vms.length}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-label="Migrations in flight" className="card">
        <h2>Migrations in flight</h2>
        {migrations.error ? (
          <p className="muted">{describeError(migrations.error).message}</p>
        ) : (
          <p data-testid="migrations-in-flight">
            {flying.length === 0 ? "None." : flying.map((m) => `${m.vm} (${m.phase})`).join(", ")}{" "}
            <Link href={`/migrations?ns=${encodeURIComponent(listed ?? ALL_NAMESPACES)}`}>All migrations</Link>
          </p>
        )}
      </section>
      <section aria-label="Recent warnings" className="card">
        <h2>Recent warnings in {namespace}</h2>
        {events.error && <p className="muted">{describeError(events.error).message}</p>}
        {events.data && warnings.length === 0 ? (
          <p className="muted">No warnings.</p>
        ) : (
          <ul data-testid="recent-warnings">
            {warnings.map((e) => (
              <li key={e.uid}>
                {e.time ? <time dateTime={e.time}>{new Date(e.time).toLocaleTimeString()}</time> : ""} {e.kind} {e.name}
                : <strong>{e.reason}</strong> {e.message}
              </li>
            ))}
          </ul>
        )}
        <Link href={`/events?ns=${encodeURIComponent(namespace)}`}>All events</Link>
      </section>
    </Shell>
  );
}
