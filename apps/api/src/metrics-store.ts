import type { DomainStats } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";
import type { HandlerDialer, NodeStats } from "./handler-dialer.ts";

// The dashboard's graphs without a Prometheus: a bounded store in the API,
// fed by the handlers. Every sampleSeconds the API asks each node's handler
// for the domain stats of the VMIs running there and keeps, per VMI, the
// last retention's worth of points; a VMI not seen for that long is
// dropped, and at most maxVmis are kept (the least recently seen go first).
// Each point is 11 numbers, so the store holds at most
// maxVmis × points × 88 bytes of figures (about 21 MiB at 1,000 VMIs, an
// hour at 15 s), as the chart's values say.

/** One sample of a VMI: cumulative counters as libvirt counts them, and memory as it is then. */
export interface Point {
  t: number;
  cpuSeconds: number;
  rssBytes: number;
  /** The guest's own view (its balloon driver), when it reports one. */
  usedBytes: number | undefined;
  rxBytes: number;
  txBytes: number;
  readBytes: number;
  writeBytes: number;
  readOps: number;
  writeOps: number;
}

/** A point as the graphs show it: rates per second over the step before it, memory as it was. */
export interface Rate {
  t: number;
  /** CPU in use, in cores (1 = one host CPU busy all the time). */
  cpuCores: number;
  memoryBytes: number;
  guestUsedBytes: number | undefined;
  rxBytesPerSecond: number;
  txBytesPerSecond: number;
  readBytesPerSecond: number;
  writeBytesPerSecond: number;
  readIops: number;
  writeIops: number;
}

/** Where the graphs' figures come from: this store, or a Prometheus (prometheus.ts). */
export interface VmRates {
  readonly source: "store" | "prometheus";
  /** The time between two points. */
  readonly sampleSeconds: number;
  rates(namespace: string, name: string, minutes: number): Rate[] | Promise<Rate[]>;
}

export interface MetricsStoreOptions {
  sampleSeconds: number;
  retentionMinutes: number;
  maxVmis: number;
}

const sum = <T>(items: readonly T[], pick: (item: T) => number) => items.reduce((acc, item) => acc + pick(item), 0);

/** A VMI's point from its domain stats. */
export function pointOf(t: number, stats: DomainStats): Point {
  const { memory } = stats;
  return {
    t,
    cpuSeconds: stats.cpu.timeNs / 1e9,
    rssBytes: (memory.rssKiB ?? 0) * 1024,
    usedBytes:
      memory.availableKiB !== undefined && memory.unusedKiB !== undefined
        ? (memory.availableKiB - memory.unusedKiB) * 1024
        : undefined,
    rxBytes: sum(stats.interfaces, (i) => i.rxBytes),
    txBytes: sum(stats.interfaces, (i) => i.txBytes),
    readBytes: sum(stats.disks, (d) => d.readBytes),
    writeBytes: sum(stats.disks, (d) => d.writeBytes),
    readOps: sum(stats.disks, (d) => d.readRequests),
    writeOps: sum(stats.disks, (d) => d.writeRequests),
  };
}

/** Rates between consecutive points; a step where a counter went back (the VM restarted) starts afresh. */
export function ratesOf(points: readonly Point[]): Rate[] {
  const rates: Rate[] = [];
  for (let i = 1; i < points.length; i += 1) {
    const [a, b] = [points[i - 1], points[i]];
    if (!a || !b) continue;
    const seconds = (b.t - a.t) / 1000;
    const per = (pick: (p: Point) => number) => (pick(b) - pick(a)) / seconds;
    const deltas = [
      per((p) => p.cpuSeconds),
      per((p) => p.rxBytes),
      per((p) => p.txBytes),
      per((p) => p.readBytes),
      per((p) => p.writeBytes),
      per((p) => p.readOps),
      per((p) => p.writeOps),
    ];
    if (seconds <= 0 || deltas.some((d) => d < 0)) continue;
    const [cpuCores = 0, rx = 0, tx = 0, rd = 0, wr = 0, rdOps = 0, wrOps = 0] = deltas;
    rates.push({
      t: b.t,
      cpuCores,
      memoryBytes: b.rssBytes,
      guestUsedBytes: b.usedBytes,
      rxBytesPerSecond: rx,
      txBytesPerSecond: tx,
      readBytesPerSecond: rd,
      writeBytesPerSecond: wr,
      readIops: rdOps,
      writeIops: wrOps,
    });
  }
  return rates;
}

export class MetricsStore implements VmRates {
  readonly source = "store" as const;
  readonly options: MetricsStoreOptions;
  private readonly vmis = new Map<string, Point[]>();

  constructor(options: MetricsStoreOptions) {
    this.options = options;
  }

  get sampleSeconds(): number {
    return this.options.sampleSeconds;
  }

  private get capacity(): number {
    return Math.max(2, Math.ceil((this.options.retentionMinutes * 60) / this.options.sampleSeconds) + 1);
  }

  /** Keeps one sample of every VMI a handler reported at `t`, and forgets what is older than the retention. */
  record(t: number, nodes: readonly NodeStats[]): void {
    for (const node of nodes) {
      for (const { namespace, name, stats } of node.vmis) {
        const key = `${namespace}/${name}`;
        const points = this.vmis.get(key) ?? [];
        points.push(pointOf(t, stats));
        if (points.length > this.capacity) points.splice(0, points.length - this.capacity);
        // Re-inserted, so the map's order is the order VMIs were last seen in.
        this.vmis.delete(key);
        this.vmis.set(key, points);
      }
    }
    const oldest = t - this.options.retentionMinutes * 60_000;
    for (const [key, points] of this.vmis) {
      if ((points.at(-1)?.t ?? 0) < oldest) this.vmis.delete(key);
    }
    for (const key of this.vmis.keys()) {
      if (this.vmis.size <= this.options.maxVmis) break;
      this.vmis.delete(key);
    }
  }

  /** A VMI's rates over the last `minutes`. */
  rates(namespace: string, name: string, minutes: number, now = Date.now()): Rate[] {
    const since = now - minutes * 60_000;
    const points = this.vmis.get(`${namespace}/${name}`) ?? [];
    // One point before the window, so that its first rate is in it.
    const first = Math.max(0, points.findIndex((p) => p.t >= since) - 1);
    return ratesOf(points.slice(first)).filter((r) => r.t >= since);
  }

  get size(): number {
    return this.vmis.size;
  }

  /** Samples every node's handler now and then every sampleSeconds, until the signal aborts. */
  run(handlers: Pick<HandlerDialer, "statsOfEveryNode">, log: Logger, signal: AbortSignal): void {
    const sample = async () => {
      try {
        const answers = await handlers.statsOfEveryNode((node, error) => {
          log.debug("no stats from a node's handler", { node, error });
        });
        this.record(Date.now(), answers);
      } catch (error) {
        log.warn("could not sample the handlers for the VM graphs", { error });
      }
    };
    const timer = setInterval(() => void sample(), this.options.sampleSeconds * 1000);
    timer.unref();
    signal.addEventListener(
      "abort",
      () => {
        clearInterval(timer);
      },
      { once: true },
    );
    void sample();
  }
}
