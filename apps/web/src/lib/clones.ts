import type { AppRouter } from "@kubevirt-ts/api/router";
import { ClonePhase } from "@kubevirt-ts/kubevirt-api";
import type { inferRouterOutputs } from "@trpc/server";

// A VM's clone as its Clone dialog shows it: the clone controller's phase in words, and what it says it is doing.

export type CloneRow = inferRouterOutputs<AppRouter>["clones"]["list"]["clones"][number];

const PHASES: Record<string, string> = {
  [ClonePhase.Unset]: "Pending",
  [ClonePhase.SnapshotInProgress]: "Taking a snapshot",
  [ClonePhase.RestoreInProgress]: "Restoring the snapshot",
  [ClonePhase.CreatingTargetVM]: "Creating the new VM",
  [ClonePhase.Succeeded]: "Succeeded",
  [ClonePhase.Failed]: "Failed",
};

/** The clone's state in words: its phase, and the controller's message while it runs or once it failed. */
export function cloneState(row: Pick<CloneRow, "phase" | "succeeded" | "message">): string {
  const phase = PHASES[row.phase] ?? row.phase;
  return row.succeeded || !row.message ? phase : `${phase}: ${row.message}`;
}
