import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@kubevirt-ts/api/router";
import { formatBytes, formatRate } from "./metrics";

// A live migration's figures as the API sends them (libvirt's job, read by
// the handler of the node it left), and how the VM's page reads them.

/** A migration as the API lists it, of one VM or of a namespace. */
export type Migration = inferRouterOutputs<AppRouter>["migrations"]["list"]["migrations"][number];
export type MigrationFigures = NonNullable<Migration["progress"]>;

/** Seconds between two times (or since the first), as a migration's line shows them. */
function seconds(from: string | undefined, to: string | undefined): string {
  if (!from) return "";
  const elapsed = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  return `${(elapsed / 1000).toFixed(1)} s`;
}

/**
 * What follows a migration's phase in words: cancelling, from and to which node, pre- or post-copy, how long so far or
 * in all, moved by a drain, under which MigrationPolicy.
 */
export function migrationInWords(m: Migration): string {
  const started = m.phases[0]?.time;
  const ended = m.ended ? m.phases.at(-1)?.time : undefined;
  return [
    m.cancelling && !m.ended ? " (cancelling)" : "",
    m.sourceNode ? ` from ${m.sourceNode}` : "",
    m.targetNode ? ` to ${m.targetNode}` : "",
    m.mode ? `, ${m.mode === "PostCopy" ? "post-copy" : "pre-copy"}` : "",
    m.phases.length > 0 ? `, ${seconds(started, ended)}${m.ended ? " in all" : " so far"}` : "",
    m.evacuation ? ` (moved off ${m.evacuation} by a drain)` : "",
    m.policy ? `, under MigrationPolicy ${m.policy}` : "",
  ].join("");
}

export interface FiguresView {
  /** One line: what was sent and is left, at what rate; or, once done, what was sent in all and in how long. */
  line: string;
  /**
   * The share of the guest's data copied so far, 0 to 1, while it runs (pre-copy sends pages again as the guest dirties
   * them).
   */
  copied: number | undefined;
  /** Once completed: the switch-over's real downtime, when libvirt reported it. */
  downtime: string | undefined;
}

const ms = (value: number) => (value < 10_000 ? `${String(value)} ms` : `${(value / 1000).toFixed(1)} s`);

export function describeFigures(f: MigrationFigures): FiguresView {
  const sent = f.dataProcessed === undefined ? undefined : formatBytes(f.dataProcessed);
  if (f.phase === "Running") {
    const parts = [
      sent === undefined ? undefined : `${sent} sent`,
      f.dataRemaining === undefined
        ? undefined
        : `${formatBytes(f.dataRemaining)} left${f.dataTotal === undefined ? "" : ` of ${formatBytes(f.dataTotal)}`}`,
      f.memoryBytesPerSecond === undefined ? undefined : `at ${formatRate(f.memoryBytesPerSecond)}`,
      f.iteration === undefined ? undefined : `pass ${String(f.iteration + 1)} over memory`,
      f.expectedDowntimeMs === undefined ? undefined : `downtime expected ${ms(f.expectedDowntimeMs)}`,
    ].filter((p) => p !== undefined);
    const copied =
      f.dataTotal && f.dataRemaining !== undefined
        ? Math.min(1, Math.max(0, (f.dataTotal - f.dataRemaining) / f.dataTotal))
        : undefined;
    return { line: parts.length > 0 ? parts.join(", ") : "Sending; no figures yet.", copied, downtime: undefined };
  }
  const took = f.elapsedMs === undefined ? "" : ` in ${ms(f.elapsedMs)}`;
  const verb = f.phase === "Completed" ? "Sent" : "Had sent";
  return {
    line: sent === undefined ? `${f.phase}${took}.` : `${verb} ${sent}${took}.`,
    copied: undefined,
    downtime: f.downtimeMs === undefined ? undefined : ms(f.downtimeMs),
  };
}
