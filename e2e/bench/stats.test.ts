import { describe, expect, it } from "vitest";
import { percentile, ratio, summarize } from "./stats.ts";

describe("percentiles", () => {
  it("are nearest-rank: always a value that was observed", () => {
    const samples = [5, 1, 4, 2, 3];
    expect(percentile(samples, 50)).toBe(3);
    expect(percentile(samples, 95)).toBe(5);
    expect(percentile(samples, 20)).toBe(1);
    expect(percentile(samples, 21)).toBe(2);
    expect(percentile([7], 95)).toBe(7);
  });

  it("of 20 samples: p50 is the 10th, p95 the 19th", () => {
    const samples = Array.from({ length: 20 }, (_, i) => 20 - i);
    expect(summarize(samples)).toEqual({ n: 20, p50: 10, p95: 19, max: 20 });
  });

  it("refuse an empty sample and a percentile out of range", () => {
    expect(() => percentile([], 50)).toThrow(/no samples/);
    expect(() => percentile([1], 0)).toThrow(/outside/);
    expect(() => percentile([1], 101)).toThrow(/outside/);
  });
});

describe("ratios", () => {
  it("divide, and have no value against zero", () => {
    expect(ratio(23, 9)).toBeCloseTo(2.556, 3);
    expect(ratio(5, 0)).toBeNull();
  });
});
