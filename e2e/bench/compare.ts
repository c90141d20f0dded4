import type { Run } from "./results.ts";

// The change of every figure from one run to the next: rows matched by id,
// values by key. A figure that appears or disappears is said so, never
// silently dropped.

export interface Change {
  id: string;
  key: string;
  before: number | null;
  after: number | null;
  /** after / before − 1, when both are measured and before is not zero. */
  relative: number | null;
}

export function compareRuns(before: Run, after: Run): { changes: Change[]; added: string[]; removed: string[] } {
  const previous = new Map(before.rows.map((r) => [r.id, r]));
  const current = new Set(after.rows.map((r) => r.id));
  const changes: Change[] = [];
  const added: string[] = [];
  for (const row of after.rows) {
    const old = previous.get(row.id);
    if (!old) {
      added.push(row.id);
      continue;
    }
    for (const [key, value] of Object.entries(row.values)) {
      const was = old.values[key] ?? null;
      changes.push({
        id: row.id,
        key,
        before: was,
        after: value,
        relative: was !== null && value !== null && was !== 0 ? value / was - 1 : null,
      });
    }
  }
  return { changes, added, removed: before.rows.filter((r) => !current.has(r.id)).map((r) => r.id) };
}

const show = (value: number | null) => (value === null ? "—" : String(Number(value.toPrecision(4))));

export function formatComparison(before: Run, after: Run): string {
  const { changes, added, removed } = compareRuns(before, after);
  const units = new Map(after.rows.map((r) => [r.id, r.unit]));
  const lines = [`${before.date} (${before.label}) → ${after.date} (${after.label})`];
  for (const c of changes) {
    const change = c.relative === null ? "" : `${c.relative >= 0 ? "+" : ""}${(c.relative * 100).toFixed(1)} %`;
    lines.push(
      `  ${`${c.id} ${c.key}`.padEnd(44)} ${show(c.before).padStart(10)} ` +
        `→ ${show(c.after).padStart(10)} ${(units.get(c.id) ?? "").padEnd(12)} ${change}`,
    );
  }
  for (const id of added) lines.push(`  ${id}: new in this run`);
  for (const id of removed) lines.push(`  ${id}: not measured in this run`);
  return lines.join("\n");
}
