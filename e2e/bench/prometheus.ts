// The Prometheus text format, as far as counters need it: samples with their
// labels, and the change of a counter between two scrapes.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key = "", value = ""] of (match[2] ?? "").matchAll(LABEL))
      labels[key] = value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1] ?? "", labels, value: Number(match[3]) });
  }
  return samples;
}

/** A counter's total by the given labels' values (joined with a space), e.g. by verb and resource. */
export function sumBy(
  samples: readonly Sample[],
  name: string,
  by: (labels: Record<string, string>) => string | undefined,
): Map<string, number> {
  const totals = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = by(s.labels);
    if (key !== undefined) totals.set(key, (totals.get(key) ?? 0) + s.value);
  }
  return totals;
}

/** What each key grew by from before to after; keys that did not grow are left out. */
export function delta(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Map<string, number> {
  const grown = new Map<string, number>();
  for (const [key, value] of after) {
    const change = value - (before.get(key) ?? 0);
    if (change > 0) grown.set(key, change);
  }
  return grown;
}

/** The bucketed quantile of a Prometheus histogram (linear within a bucket, as histogram_quantile does). */
export function histogramQuantile(
  samples: readonly Sample[],
  name: string,
  match: Record<string, string>,
  q: number,
): number | undefined {
  const buckets = samples
    .filter((s) => s.name === `${name}_bucket` && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .map((s) => ({ le: s.labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(s.labels.le), count: s.value }))
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let previous = { le: 0, count: 0 };
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Number.POSITIVE_INFINITY) return previous.le;
      return (
        previous.le +
        ((bucket.le - previous.le) * (rank - previous.count)) / Math.max(bucket.count - previous.count, 1e-9)
      );
    }
    previous = bucket;
  }
  return previous.le;
}

/** The samples of `after` less the same series in `before`: a histogram or counter over an interval. */
export function sampleDelta(before: readonly Sample[], after: readonly Sample[]): Sample[] {
  const key = (s: Sample) =>
    `${s.name}{${Object.entries(s.labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${v}`)
      .join(",")}}`;
  const old = new Map(before.map((s) => [key(s), s.value]));
  return after.map((s) => ({ ...s, value: s.value - (old.get(key(s)) ?? 0) }));
}
