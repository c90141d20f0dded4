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

export const distribution = (summary: Summary): Record<string, number> => ({ p50: summary.p50, p95: summary.p95, max: summary.max });

const round = (value: number) => (Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2));

export function formatValues(row: Row): string {
  const parts = Object.entries(row.values).map(([key, value]) => (value === null ? `${key} —` : key === "value" ? `${round(value)} ${row.unit}` : `${key} ${round(value)}`));
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
    ...run.rows.map((r) => `| ${cell(r.figure)} | ${cell(formatValues(r))}${r.note ? ` (${cell(r.note)})` : ""} | ${cell(r.method)} |`),
    "",
  ];
  return lines.join("\n");
}

/** The run as a plain table for the terminal. */
export function text(run: Run): string {
  const width = Math.min(60, Math.max(...run.rows.map((r) => r.figure.length)));
  return run.rows.map((r) => `${r.figure.padEnd(width)}  ${formatValues(r)}${r.note ? `  (${r.note})` : ""}\n${"".padEnd(width)}  method: ${r.method}`).join("\n");
}
