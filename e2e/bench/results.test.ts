import { describe, expect, it } from "vitest";
import { type Run, SUMMARY_END, SUMMARY_START, summarized } from "./results.ts";

const run = (date: string, rows: Run["rows"]): Run => ({ date, label: "run", commit: "abc", host: "h", rows });
const row = (id: string, value: number) => ({ id, figure: `figure ${id}`, unit: "×", values: { value }, method: "m" });

describe("the summary at the top of the history", () => {
  const doc = "# Benchmarks\n\nIntro.\n\n## Runs\n";

  it("is put below the first heading, with the run's summary figures only", () => {
    const out = summarized(doc, run("2026-11-27T10:00:00Z", [row("ratio.20.start", 2.6), row("start.20.running", 23)]));
    expect(out.startsWith(`# Benchmarks\n\n${SUMMARY_START}\n`)).toBe(true);
    expect(out).toContain("| figure ratio.20.start | 2.60 × | 2026-11-27 run | `ratio.20.start` |");
    expect(out).not.toContain("start.20.running");
    expect(out.endsWith(`${SUMMARY_END}\n\nIntro.\n\n## Runs\n`)).toBe(true);
  });

  it("replaces the figures a later run measured and keeps the others with their own run's date", () => {
    const rows = [row("ratio.20.start", 2.6), row("idle.20.node.per-vm", 40)];
    const first = summarized(doc, run("2026-11-27T10:00:00Z", rows));
    const second = summarized(first, run("2026-11-28T10:00:00Z", [row("ratio.20.start", 2.1)]));
    expect(second).toContain("| figure ratio.20.start | 2.10 × | 2026-11-28 run | `ratio.20.start` |");
    expect(second).not.toContain("2.60 ×");
    expect(second).toContain("| figure idle.20.node.per-vm | 40.0 × | 2026-11-27 run | `idle.20.node.per-vm` |");
    expect(second.split(SUMMARY_START)).toHaveLength(2);
    expect(second.indexOf("`ratio.20.start`")).toBeLessThan(second.indexOf("`idle.20.node.per-vm`"));
    expect(second.endsWith("Intro.\n\n## Runs\n")).toBe(true);
  });
});
