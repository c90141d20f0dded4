import type { Summary } from "./stats.ts";

// One benchmark run as data: each figure a row with a stable id (the key
// the comparison matches runs on), its values, its unit and how it was
// measured. A run is kept as JSON under .local/bench/ and appended as a
// dated table to docs/benchmarks.md.

export interface Row {
  /** Stable across runs, e.g. "start.20.running"; the comparison matches on it. */
  id: string;
  figure: string;
  unit: string;
  /** p50/p95/max for a distribution, `value` for a single figure; null when it could not be measured (see note). */
  values: Record<string, number | null>;
  method: string;
  note?: string;
}

export interface Run {
  date: string;
  label: string;
  commit: string;
  host: string;
  rows: Row[];
}

export const distribution = (summary: Summary): Record<string, number> => ({
  p50: summary.p50,
  p95: summary.p95,
  max: summary.max,
});

const round = (value: number) =>
  Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2);

export function formatValues(row: Row): string {
  const parts = Object.entries(row.values).map(([key, value]) =>
    value === null ? `${key} —` : key === "value" ? `${round(value)} ${row.unit}` : `${key} ${round(value)}`,
  );
  const text = parts.join(" · ");
  return Object.keys(row.values).some((k) => k !== "value") ? `${text} ${row.unit}` : text;
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The run as a Markdown section: a dated heading and one table row per figure. */
export function markdown(run: Run): string {
  const lines = [
    `## ${run.date} — ${run.label}`,
    "",
    `Commit ${run.commit}, host ${run.host}.`,
    "",
    "| figure | result | method |",
    "| --- | --- | --- |",
    ...run.rows.map(
      (r) =>
        `| ${cell(r.figure)} | ${cell(formatValues(r))}${r.note ? ` (${cell(r.note)})` : ""} | ${cell(r.method)} |`,
    ),
    "",
  ];
  return lines.join("\n");
}

/** The run as a plain table for the terminal. */
export function text(run: Run): string {
  const width = Math.min(60, Math.max(...run.rows.map((r) => r.figure.length)));
  return run.rows
    .map(
      (r) =>
        `${r.figure.padEnd(width)} ` +
        ` ${formatValues(r)}${r.note ? `  (${r.note})` : ""}\n${"".padEnd(width)}  ` +
        `method: ${r.method}`,
    )
    .join("\n");
}

/** The figures the summary atop docs/benchmarks.md shows, in order: what a VM costs against a pod, idle, in memory. */
const SUMMARY_IDS = [
  "ratio.1.start",
  "ratio.20.start",
  "ratio.20.vmi.running",
  "ratio.20.pod.running",
  "ratio.1.cpu",
  "ratio.20.cpu",
  "idle.20.node.per-vm",
  "idle.20.handler-launcher.per-vm",
  "idle.20.vcpu.per-vm",
  "idle.20.memory.overhead",
  "idle.20.memory.tb-cache",
  "idle.20.memory.over-request",
  "capacity.tiny.node",
  "capacity.tiny.machine-memory",
];
export const SUMMARY_START = "<!-- summary: kept current by make bench (e2e/bench/results.ts) -->";
export const SUMMARY_END = "<!-- end of summary -->";
const SUMMARY_HEAD = ["| figure | now | run | id |", "| --- | --- | --- | --- |"];

/**
 * The history document with its summary brought up to date: each summary figure this run measured replaces its line
 * (matched by id), the others keep theirs and the run that measured them. Without a summary yet, one is put below the
 * first heading.
 */
export function summarized(doc: string, run: Run): string {
  const start = doc.indexOf(SUMMARY_START);
  const end = doc.indexOf(SUMMARY_END);
  const lines = new Map<string, string>();
  if (start >= 0 && end > start) {
    for (const line of doc.slice(start, end).split("\n")) {
      const id = /\| `([^`]+)` \|$/.exec(line)?.[1];
      if (id) lines.set(id, line);
    }
  }
  for (const r of run.rows.filter((row) => SUMMARY_IDS.includes(row.id))) {
    const result = `${formatValues(r)}${r.note ? ` (${r.note})` : ""}`;
    const measured = `${run.date.slice(0, 10)} ${cell(run.label)}`;
    lines.set(r.id, `| ${cell(r.figure)} | ${cell(result)} | ${measured} | \`${r.id}\` |`);
  }
  const order = (id: string) => (SUMMARY_IDS.includes(id) ? SUMMARY_IDS.indexOf(id) : SUMMARY_IDS.length);
  const sorted = [...lines].sort(([a], [b]) => order(a) - order(b)).map(([, line]) => line);
  const block = [SUMMARY_START, "", ...SUMMARY_HEAD, ...sorted, "", SUMMARY_END].join("\n");
  if (start >= 0 && end > start) return `${doc.slice(0, start)}${block}${doc.slice(end + SUMMARY_END.length)}`;
  const heading = doc.indexOf("\n") + 1;
  return `${doc.slice(0, heading)}\n${block}\n${doc.slice(heading)}`;
}
