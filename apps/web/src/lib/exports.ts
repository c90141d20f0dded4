import type { AppRouter } from "@kubevirt-ts/api/router";
import { ExportPhase } from "@kubevirt-ts/kubevirt-api";
import type { inferRouterOutputs } from "@trpc/server";

// A VM's export as its Exports list shows it: the export controller's phase in words, and why it waits.

export type ExportRow = inferRouterOutputs<AppRouter>["exports"]["list"]["exports"][number];

const PHASES: Record<string, string> = {
  [ExportPhase.Pending]: "Pending",
  [ExportPhase.Ready]: "Ready to download",
  [ExportPhase.Skipped]: "Nothing to export",
  [ExportPhase.Terminated]: "Ended",
};

/** The export's state in words: its phase, and the controller's message while it is not ready. */
export function exportState(row: Pick<ExportRow, "phase" | "message">): string {
  const phase = PHASES[row.phase] ?? row.phase;
  return row.message && row.phase !== ExportPhase.Ready ? `${phase}: ${row.message}` : phase;
}
