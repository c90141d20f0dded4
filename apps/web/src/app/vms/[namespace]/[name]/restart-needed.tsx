"use client";

import { VmConditionType, type VirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { MAX_PENDING_CHANGES } from "@kubevirt-ts/vm-rules";
import { useQuery } from "@tanstack/react-query";
import { type ReactNode, useEffect } from "react";
import { useTRPC } from "../../../../lib/trpc";
import { describeChange } from "../../../../lib/vm-edit";

// A running VM whose spec changed since it started (its RestartRequired
// condition): which changes wait for the restart, field by field, with the
// value it runs with and the one it will start with, and the restart itself.

export function RestartNeeded({ vm, restart }: { vm: VirtualMachine; restart: ReactNode }) {
  const trpc = useTRPC();
  const namespace = vm.metadata.namespace ?? "";
  const name = vm.metadata.name ?? "";
  const needed = vm.status?.conditions?.some((c) => c.type === VmConditionType.RestartRequired && c.status === "True");
  const changes = useQuery({ ...trpc.vms.pendingChanges.queryOptions({ namespace, name }), enabled: needed === true });
  const { refetch } = changes;
  // Each change of the spec (its generation) may add or take back a change.
  const generation = vm.metadata.generation;
  useEffect(() => {
    if (needed) void refetch();
  }, [needed, generation, refetch]);
  if (!needed) return null;
  const list = changes.data?.changes;
  return (
    <section className="card restart-needed" aria-label="Restart needed" data-testid="restart-needed">
      <h3>Restart needed for changes to take effect</h3>
      {changes.error ? (
        <p className="error">The changes cannot be told: {changes.error.message}</p>
      ) : list === undefined ? (
        <p className="muted">{changes.data?.reason ?? "Reading the changes…"}</p>
      ) : (
        <>
          <p>
            {name} runs as it was started; {list.length === 1 ? "this change waits" : "these changes wait"} for its next
            start:
          </p>
          <table className="vms" data-testid="pending-changes">
            <thead>
              <tr>
                <th scope="col">What</th>
                <th scope="col">Field</th>
                <th scope="col">Runs with</th>
                <th scope="col">Starts with</th>
              </tr>
            </thead>
            <tbody>
              {list.map((c) => {
                const { what, field } = describeChange(c);
                return (
                  <tr key={c.path}>
                    <td>{what}</td>
                    <td>
                      <code>{field}</code>
                    </td>
                    <td>{c.before === undefined ? <span className="muted">not set</span> : <code>{c.before}</code>}</td>
                    <td>{c.after === undefined ? <span className="muted">removed</span> : <code>{c.after}</code>}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {list.length >= MAX_PENDING_CHANGES && (
            <p className="muted">
              The first {MAX_PENDING_CHANGES} are listed; the YAML tab holds the spec it will start with.
            </p>
          )}
        </>
      )}
      <div className="toolbar">{restart}</div>
    </section>
  );
}
