"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { describeError, useTRPC } from "../../lib/trpc";
import { Shell, useNamespace } from "../vms/shell";

// The namespace's events, newest first and kept current: what happened to
// its VMs, their instances, launcher pods, disks and the rest, with VMs and
// their instances linked to their pages. Warnings can be shown alone.

/** The kinds whose events link to a VM's page (a VMI has its VM's name). */
const VM_KINDS = new Set(["VirtualMachine", "VirtualMachineInstance"]);

export function EventsView() {
  const trpc = useTRPC();
  const namespace = useNamespace();
  const [warningsOnly, setWarningsOnly] = useState(false);
  const events = useQuery({ ...trpc.events.queryOptions({ namespace }), refetchInterval: 5_000 });
  const shown = (events.data ?? []).filter((e) => !warningsOnly || e.type === "Warning");
  const count = events.data
    ? `${String(shown.length)} of ${String(events.data.length)} events in ${namespace}`
    : "Loading…";
  return (
    <Shell title="Events">
      <div className="toolbar" role="group" aria-label="Filters">
        <label className="inline">
          <input
            type="checkbox"
            checked={warningsOnly}
            onChange={(e) => {
              setWarningsOnly(e.target.checked);
            }}
          />{" "}
          Warnings only
        </label>
        <span className="spacer" />
        <span className="muted" data-testid="events-count">
          {count}
        </span>
      </div>
      {events.error && (
        <p className="error" role="alert">
          {describeError(events.error).message}
        </p>
      )}
      <table className="vms" data-testid="events">
        <caption className="visually-hidden">Events in {namespace}, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Type</th>
            <th scope="col">Object</th>
            <th scope="col">Reason</th>
            <th scope="col">Message</th>
            <th scope="col">Count</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((e) => (
            <tr key={e.uid} data-type={e.type}>
              <td>{e.time ? <time dateTime={e.time}>{new Date(e.time).toLocaleString()}</time> : ""}</td>
              <td>{e.type === "Warning" ? <strong>Warning</strong> : e.type}</td>
              <td>
                {e.kind}{" "}
                {VM_KINDS.has(e.kind) ? (
                  <Link
                    href={
                      `/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(e.name)}?ns=` +
                      `${encodeURIComponent(namespace)}&tab=events`
                    }
                  >
                    {e.name}
                  </Link>
                ) : (
                  e.name
                )}
              </td>
              <td>{e.reason}</td>
              <td>{e.message}</td>
              <td className="number">{e.count}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {events.data && shown.length === 0 && (
        <p className="card">
          {warningsOnly
            ? "No warnings."
            : `No events in ${namespace} (the API server keeps them for an hour by default).`}
        </p>
      )}
    </Shell>
  );
}
