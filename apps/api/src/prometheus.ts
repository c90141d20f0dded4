import type { Rate } from "./metrics-store.ts";

// The dashboard's graphs from a Prometheus that scrapes the handlers (the
// chart's metrics.prometheusUrl), instead of the API's own store: the same
// figures (metrics-store.ts's Rate), asked of Prometheus's HTTP API as range
// queries over KubeVirt's metric names, a point every sampleSeconds. CPU,
// network and disk are rates over four scrapes (the chart's ServiceMonitor
// scrapes every metrics.scrapeSeconds), as Prometheus advises for rate(), or
// over a step when that is longer; memory is as it was at each point.

type Figure = Exclude<keyof Rate, "t">;

/** Each figure's PromQL, for one VMI's label selector and the rate window. */
export const PROMQL: Record<Figure, (selector: string, window: string) => string> = {
  cpuCores: (s, w) => `sum(rate(kubevirt_vmi_cpu_usage_seconds_total{${s}}[${w}]))`,
  memoryBytes: (s) => `sum(kubevirt_vmi_memory_resident_bytes{${s}})`,
  guestUsedBytes: (s) => `sum(kubevirt_vmi_memory_used_bytes{${s}})`,
  rxBytesPerSecond: (s, w) => `sum(rate(kubevirt_vmi_network_receive_bytes_total{${s}}[${w}]))`,
  txBytesPerSecond: (s, w) => `sum(rate(kubevirt_vmi_network_transmit_bytes_total{${s}}[${w}]))`,
  readBytesPerSecond: (s, w) => `sum(rate(kubevirt_vmi_storage_read_traffic_bytes_total{${s}}[${w}]))`,
  writeBytesPerSecond: (s, w) => `sum(rate(kubevirt_vmi_storage_write_traffic_bytes_total{${s}}[${w}]))`,
  readIops: (s, w) => `sum(rate(kubevirt_vmi_storage_iops_read_total{${s}}[${w}]))`,
  writeIops: (s, w) => `sum(rate(kubevirt_vmi_storage_iops_write_total{${s}}[${w}]))`,
};

/** A PromQL label value: quotes and backslashes escaped. */
const quoted = (value: string) => `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/** The label selector of one VMI, by the labels the handlers put on every kubevirt_vmi_ series. */
export const vmiSelector = (namespace: string, name: string): string =>
  `namespace=${quoted(namespace)},name=${quoted(name)}`;

/**
 * Every figure in one query: each figure's sum labelled `figure` with its name, joined with `or` (one request, not
 * nine).
 */
export function figuresQuery(selector: string, window: string): string {
  return (Object.keys(PROMQL) as Figure[])
    .map((f) => `label_replace(${PROMQL[f](selector, window)}, "figure", "${f}", "", "")`)
    .join(" or ");
}

/** Prometheus's range answer for one query: [unix seconds, value as text] pairs (empty when the series has none). */
export type Samples = readonly (readonly [number, string])[];

/**
 * The graphs' rates from each figure's samples: a point at every time CPU has one (the figure every running VMI
 * has), the others taken at that time (0 when missing; the guest's memory undefined, as the store leaves it).
 */
export function ratesFromSamples(samples: Partial<Record<Figure, Samples>>): Rate[] {
  const at = (figure: Figure) => new Map((samples[figure] ?? []).map(([t, v]) => [t, Number(v)]));
  const figures = Object.fromEntries((Object.keys(PROMQL) as Figure[]).map((f) => [f, at(f)])) as Record<
    Figure,
    Map<number, number>
  >;
  const value = (figure: Figure, t: number) => {
    const v = figures[figure].get(t);
    return v === undefined || Number.isNaN(v) ? 0 : v;
  };
  return [...figures.cpuCores.keys()]
    .sort((a, b) => a - b)
    .map((t) => ({
      t: t * 1000,
      cpuCores: value("cpuCores", t),
      memoryBytes: value("memoryBytes", t),
      guestUsedBytes: figures.guestUsedBytes.get(t),
      rxBytesPerSecond: value("rxBytesPerSecond", t),
      txBytesPerSecond: value("txBytesPerSecond", t),
      readBytesPerSecond: value("readBytesPerSecond", t),
      writeBytesPerSecond: value("writeBytesPerSecond", t),
      readIops: value("readIops", t),
      writeIops: value("writeIops", t),
    }));
}

interface RangeAnswer {
  status: "success" | "error";
  error?: string;
  errorType?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; values: [number, string][] }[] };
}

/** The graphs' source when the chart names a Prometheus. */
export class PrometheusRates {
  readonly source = "prometheus" as const;
  readonly url: string;
  readonly sampleSeconds: number;
  /** How often Prometheus scrapes the handlers. */
  readonly scrapeSeconds: number;

  constructor(url: string, options: { sampleSeconds: number; scrapeSeconds: number }) {
    this.url = url;
    this.sampleSeconds = options.sampleSeconds;
    this.scrapeSeconds = options.scrapeSeconds;
  }

  /** One range query's series, each by its `figure` label. */
  private async range(query: string, start: number, end: number): Promise<Partial<Record<Figure, Samples>>> {
    const address = new URL("api/v1/query_range", this.url.endsWith("/") ? this.url : `${this.url}/`);
    const body = new URLSearchParams({
      query,
      start: String(start),
      end: String(end),
      step: `${String(this.sampleSeconds)}s`,
    });
    let answer: RangeAnswer;
    try {
      const res = await fetch(address, { method: "POST", body, signal: AbortSignal.timeout(10_000) });
      answer = (await res.json()) as RangeAnswer;
    } catch (error) {
      throw new Error(
        `Prometheus at ${this.url} did not answer: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    if (answer.status !== "success")
      throw new Error(
        `Prometheus at ${this.url} refused the query ${query}: ${answer.errorType ?? ""} ${answer.error ?? ""}`.trim(),
      );
    return Object.fromEntries((answer.data?.result ?? []).map((series) => [series.metric.figure ?? "", series.values]));
  }

  /** A VMI's rates over the last `minutes`, asked of Prometheus. */
  async rates(namespace: string, name: string, minutes: number, now = Date.now()): Promise<Rate[]> {
    const end = Math.floor(now / 1000);
    const start = end - minutes * 60;
    const selector = vmiSelector(namespace, name);
    const window = `${String(Math.max(4 * this.scrapeSeconds, this.sampleSeconds))}s`;
    return ratesFromSamples(await this.range(figuresQuery(selector, window), start, end));
  }
}
