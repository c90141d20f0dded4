"use client";

import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { migrationInWords } from "../../../../lib/migrations";
import { MigrationFiguresLine } from "../../../ui/migration-figures";
import { useTRPC, toastOutcome } from "../../../../lib/trpc";
import { useToast } from "../../../ui/toasts";
import { ActionButton } from "../../shell";

// A VM's live migration on its page: Migrate (to the node the scheduler
// picks, or to one chosen from the list), the migration in flight or the last
// one, phase by phase with libvirt's figures (data sent and left, rate,
// downtime once it switched over), and Cancel while it runs (the migration is deleted,
// which aborts it; the guest stays where it was).

const ANY_NODE = "";

export function MigrationPanel({
  namespace,
  name,
  permission,
}: {
  namespace: string;
  name: string;
  permission: { allowed: boolean; reason?: string } | undefined;
}) {
  const trpc = useTRPC();
  const toast = useToast();
  const [target, setTarget] = useState(ANY_NODE);
  const status = useQuery({ ...trpc.migrations.list.queryOptions({ namespace, name }), refetchInterval: 1_000 });
  const nodes = useQuery({ ...trpc.nodes.queryOptions({ namespace }), refetchInterval: 10_000 });
  const migrate = useMutation(trpc.migrations.migrate.mutationOptions());
  const cancel = useMutation(trpc.migrations.cancel.mutationOptions());
  const current = status.data?.node;
  const latest = status.data?.migrations[0];
  const inFlight = latest !== undefined && !latest.ended;
  const others = (nodes.data?.nodes ?? []).map((n) => n.name).filter((n) => n !== current);
  const available = status.data?.migratable;
  const allowed = permission?.allowed === true && available?.available === true && !inFlight;
  const reason =
    permission?.allowed === false
      ? permission.reason
      : inFlight
        ? "A migration of this VM is under way."
        : available?.available === false
          ? available.reason
          : undefined;

  return (
    <section aria-label="Live migration" className="migration">
      <h2>Live migration</h2>
      <div className="toolbar">
        <label htmlFor="migration-target">Move to</label>
        <select
          id="migration-target"
          value={target}
          onChange={(e) => {
            setTarget(e.target.value);
          }}
          disabled={!allowed}
        >
          <option value={ANY_NODE}>Any node (the scheduler chooses)</option>
          {others.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
        <ActionButton
          label="Migrate"
          allowed={allowed}
          reason={reason}
          busy={migrate.isPending}
          onClick={() => {
            migrate.mutate(
              { namespace, name, ...(target === ANY_NODE ? {} : { targetNode: target }) },
              toastOutcome(
                toast,
                `Migrate ${name}`,
                ({ name: migration }) => `Migrate ${name}: ${migration} made; its progress follows.`,
              ),
            );
          }}
        />
        {inFlight && (
          <ActionButton
            label="Cancel migration"
            allowed={permission?.allowed}
            reason={permission?.reason}
            busy={cancel.isPending || latest.cancelling}
            onClick={() => {
              cancel.mutate(
                { namespace, name },
                toastOutcome(
                  toast,
                  `Cancel the migration of ${name}`,
                  () => `Cancel the migration of ${name}: asked; the guest stays where it is.`,
                ),
              );
            }}
          />
        )}
      </div>
      {status.error && (
        <p className="error" role="alert">
          {status.error.message}
        </p>
      )}
      {latest ? (
        <div data-testid="migration-progress" aria-live="polite">
          <p>
            <strong data-testid="migration-phase">{latest.phase}</strong>
            {migrationInWords(latest)}
          </p>
          {latest.progress && <MigrationFiguresLine figures={latest.progress} />}
          {latest.progressProblem && <p className="muted">{latest.progressProblem}</p>}
          {latest.failureReason && (
            <p className="error" data-testid="migration-failure">
              {latest.failureReason}
            </p>
          )}
          <ol className="timeline" aria-label="Migration phases">
            {latest.phases.map((p) => (
              <li key={p.phase}>
                <time dateTime={p.time}>{new Date(p.time).toLocaleTimeString()}</time> {p.phase}
              </li>
            ))}
          </ol>
        </div>
      ) : (
        <p className="muted">This VM has not been migrated{current ? `; it runs on ${current}` : ""}.</p>
      )}
    </section>
  );
}
