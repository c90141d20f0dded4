import type { AppRouter } from "@kubevirt-ts/api/router";
import { SnapshotIndication, dnsLabelProblem } from "@kubevirt-ts/kubevirt-api";
import { indicationMeanings } from "@kubevirt-ts/vm-rules";
import type { inferRouterOutputs } from "@trpc/server";
import { formatBytes } from "./metrics";

// A VM's snapshots as its Snapshots tab reads them: a name for a new one, each snapshot's indications as short
// badges, its state and size in words, and the check of a new VM's name as it is typed.

export type SnapshotRow = inferRouterOutputs<AppRouter>["snapshots"]["list"]["snapshots"][number];
export type RestoreRow = inferRouterOutputs<AppRouter>["snapshots"]["restores"]["restores"][number];

const two = (n: number) => String(n).padStart(2, "0");

/** A new snapshot's name: `<vm>-<yyyymmdd-hhmmss>`, in UTC, so two taken a second apart differ. */
export function defaultSnapshotName(vm: string, at: Date): string {
  const date = `${String(at.getUTCFullYear())}${two(at.getUTCMonth() + 1)}${two(at.getUTCDate())}`;
  const time = `${two(at.getUTCHours())}${two(at.getUTCMinutes())}${two(at.getUTCSeconds())}`;
  return `${vm}-${date}-${time}`;
}

/** The indications' short names; what each means is vm-rules' (indicationMeanings), as the controller writes it. */
const LABELS: Partial<Record<string, string>> = {
  [SnapshotIndication.Online]: "Online",
  [SnapshotIndication.GuestAgent]: "Guest agent",
  [SnapshotIndication.NoGuestAgent]: "No guest agent",
  [SnapshotIndication.QuiesceTimeout]: "Quiesce timeout",
  [SnapshotIndication.Paused]: "Paused",
  [SnapshotIndication.PartialSnapshot]: "Partial",
};

/** The indications as short badges, each with what it means for the snapshot. */
export function indicationBadges(indications: readonly string[]): { label: string; title: string }[] {
  const meanings: Partial<Record<string, string>> = indicationMeanings(indications);
  return indications.map((i) => ({ label: LABELS[i] ?? i, title: meanings[i] ?? i }));
}

/** The snapshot's state in words: its phase, and whether it can be restored. */
export function snapshotState(row: Pick<SnapshotRow, "phase" | "readyToUse" | "error">): string {
  if (row.phase === "Failed") return row.error ? `Failed: ${row.error}` : "Failed";
  if (row.phase === "Deleting") return "Deleting";
  if (row.readyToUse) return "Ready";
  return row.phase === "Succeeded"
    ? "Succeeded, not ready yet"
    : row.phase === "InProgress"
      ? "In progress"
      : row.phase;
}

export function snapshotSize(bytes: number | undefined): string {
  return bytes === undefined ? "—" : formatBytes(bytes);
}

/** A restore's state in words. */
export function restoreState(row: Pick<RestoreRow, "complete" | "failed" | "message">): string {
  if (row.failed) return row.message ? `Failed: ${row.message}` : "Failed";
  if (row.complete) return "Complete";
  return row.message ? `In progress: ${row.message}` : "In progress";
}

/** Why a new VM cannot have this name, undefined when it can: a DNS label no VM of the namespace has. */
export function newVmNameProblem(name: string, existing: ReadonlySet<string>): string | undefined {
  const problem = dnsLabelProblem(name);
  if (problem) return `The name ${problem}.`;
  if (existing.has(name)) return `A VM named ${name} already exists here; choose another name.`;
  return undefined;
}
