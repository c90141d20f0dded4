"use client";

import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { migrationInWords } from "../../lib/migrations";
import { describeError, toastOutcome, useTRPC } from "../../lib/trpc";
import { MigrationFiguresLine } from "../ui/migration-figures";
import { useToast } from "../ui/toasts";
import { ActionButton, Shell, useNamespaceOrAll } from "../vms/shell";

// The live migrations of a namespace, or of every namespace for who may list
// them there, newest first and kept current: each VM's phase, from and to
// which node, how long, libvirt's figures while it runs, why it failed, and
// Cancel for one in flight.

export function MigrationsView() {
  const trpc = useTRPC();
  const toast = useToast();
  const namespace = useNamespaceOrAll();
  const [inFlightOnly, setInFlightOnly] = useState(false);
  const list = useQuery({
    ...trpc.migrations.all.queryOptions(namespace === undefined ? {} : { namespace }),
    refetchInterval: 2_000,
  });
  // Cancel is offered in one namespace, where the user's permission is known.
  const permissions = useQuery({
    ...trpc.permissions.queryOptions({ namespace: namespace ?? "default" }),
    enabled: namespace !== undefined,
  });
  const cancel = useMutation(trpc.migrations.cancel.mutationOptions());
  const all = list.data?.migrations ?? [];
  const shown = all.filter((m) => !inFlightOnly || !m.ended);
  const where = namespace ?? "every namespace";
  const flying = all.filter((m) => !m.ended).length;
  return (
    <Shell title="Migrations">
      <div className="toolbar" role="group" aria-label="Filters">
        <label className="inline">
          <input
            type="checkbox"
            checked={inFlightOnly}
            onChange={(e) => {
              setInFlightOnly(e.target.checked);
            }}
          />{" "}
          In flight only
        </label>
        <span className="spacer" />
        <span className="muted" data-testid="migrations-count">
          {list.data ? `${String(flying)} in flight, ${String(all.length)} listed in ${where}` : "Loading…"}
        </span>
      </div>
      {list.error && (
        <p className="error" role="alert">
          {describeError(list.error).message}
        </p>
      )}
      <table className="vms" data-testid="migrations">
        <caption className="visually-hidden">Live migrations in {where}, newest first</caption>
        <thead>
          <tr>
            <th scope="col">VM</th>
            {namespace === undefined && <th scope="col">Namespace</th>}
            <th scope="col">Phase</th>
            <th scope="col">Started</th>
            <th scope="col">Progress</th>
            {namespace !== undefined && (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {shown.map((m) => (
            <tr key={`${m.namespace}/${m.name}`} data-phase={m.phase}>
              <td>
                <Link
                  href={
                    `/vms/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.vm)}?ns=` +
                    encodeURIComponent(m.namespace)
                  }
                >
                  {m.vm}
                </Link>
              </td>
              {namespace === undefined && <td>{m.namespace}</td>}
              <td data-testid="migration-row-phase">
                <strong>{m.phase}</strong>
                {migrationInWords(m)}
              </td>
              <td>{m.created ? <time dateTime={m.created}>{new Date(m.created).toLocaleString()}</time> : ""}</td>
              <td>
                {m.progress && <MigrationFiguresLine figures={m.progress} />}
                {m.progressProblem && <span className="muted">{m.progressProblem}</span>}
                {m.failureReason && <span className="error">{m.failureReason}</span>}
              </td>
              {namespace !== undefined && (
                <td>
                  {!m.ended && (
                    <ActionButton
                      id={`why-cancel-${m.name}`}
                      label="Cancel"
                      allowed={permissions.data?.cancelMigration.allowed}
                      reason={permissions.data?.cancelMigration.reason}
                      busy={cancel.isPending || m.cancelling}
                      onClick={() => {
                        cancel.mutate(
                          { namespace: m.namespace, name: m.vm },
                          toastOutcome(
                            toast,
                            `Cancel the migration of ${m.vm}`,
                            () => `Cancel the migration of ${m.vm}: asked; the guest stays where it is.`,
                          ),
                        );
                      }}
                    />
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && shown.length === 0 && (
        <p className="card">{inFlightOnly ? "No migration is in flight." : `No migrations in ${where}.`}</p>
      )}
      {list.data?.truncated && <p className="muted">Only the newest are listed; kubectl get vmim lists them all.</p>}
    </Shell>
  );
}
