// Summaries of samples for the benchmark's tables: nearest-rank percentiles,
// so that every figure is a value that was really observed.

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  max: number;
}

/** The nearest-rank percentile (0 < p ≤ 100) of the samples; throws on no samples, which has no percentile. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error("no samples: a percentile of nothing is not a figure");
  if (!(p > 0 && p <= 100)) throw new Error(`percentile ${String(p)} is outside (0, 100]`);
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1] ?? Number.NaN;
}

export function summarize(samples: readonly number[]): Summary {
  return { n: samples.length, p50: percentile(samples, 50), p95: percentile(samples, 95), max: Math.max(...samples) };
}

/** a ÷ b, or null when b is zero: a ratio to nothing is not a figure. */
export const ratio = (a: number, b: number): number | null => (b === 0 ? null : a / b);
