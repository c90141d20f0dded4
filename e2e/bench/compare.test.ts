import { describe, expect, it } from "vitest";
import { compareRuns, formatComparison } from "./compare.ts";
import { markdown, type Run } from "./results.ts";

const run = (date: string, rows: Run["rows"]): Run => ({ date, label: date, commit: "abc1234", host: "test", rows });
const before = run("2025-01-01", [
  {
    id: "start.1.running",
    figure: "1 VMI, create → Running",
    unit: "s",
    values: { p50: 40, p95: 40, max: 40 },
    method: "server timestamps",
  },
  {
    id: "writes.vmi",
    figure: "VMI writes per VMI",
    unit: "writes/VMI",
    values: { value: 10 },
    method: "apiserver_request_total",
  },
  { id: "gone", figure: "gone", unit: "s", values: { value: 1 }, method: "m" },
]);
const after = run("2025-01-02", [
  {
    id: "start.1.running",
    figure: "1 VMI, create → Running",
    unit: "s",
    values: { p50: 4, p95: 5, max: null },
    method: "server timestamps",
    note: "one timed out",
  },
  {
    id: "writes.vmi",
    figure: "VMI writes per VMI",
    unit: "writes/VMI",
    values: { value: 3 },
    method: "apiserver_request_total",
  },
  { id: "new", figure: "new | figure", unit: "ms", values: { value: 2 }, method: "m" },
]);

describe("comparing two runs", () => {
  it("matches figures by id and value by key, with the relative change", () => {
    const { changes, added, removed } = compareRuns(before, after);
    expect(changes.find((c) => c.id === "start.1.running" && c.key === "p50")).toEqual({
      id: "start.1.running",
      key: "p50",
      before: 40,
      after: 4,
      relative: -0.9,
    });
    expect(changes.find((c) => c.key === "max")?.relative).toBeNull();
    expect(changes.find((c) => c.id === "writes.vmi")?.relative).toBeCloseTo(-0.7);
    expect(added).toEqual(["new"]);
    expect(removed).toEqual(["gone"]);
  });

  it("prints every change, and what is new or no longer measured", () => {
    const text = formatComparison(before, after);
    expect(text).toMatch(/start\.1\.running p50 +40 → +4 s +-90\.0 %/);
    expect(text).toContain("new: new in this run");
    expect(text).toContain("gone: not measured in this run");
  });

  it("renders a dated Markdown table with one row per figure, its method, and escaped cells", () => {
    const md = markdown(after);
    expect(md).toContain("## 2025-01-02 — 2025-01-02");
    expect(md).toContain(
      "| 1 VMI, create → Running | p50 4.00 · p95 5.00 · max — s (one timed out) | server timestamps |",
    );
    expect(md).toContain("| new \\| figure | 2.00 ms | m |");
  });
});
