"use client";

import "uplot/dist/uPlot.min.css";
import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type uPlot from "uplot";
import { type MetricRate, formatBytes, formatCores, formatRate } from "../../../../lib/metrics";
import { describeError, useTRPC } from "../../../../lib/trpc";

// The Metrics tab: a running VM's CPU, memory, network and disk over the
// last 15 minutes or hour, kept current, drawn with uPlot, and the same
// figures as a table for those who do not see the graphs. The points come
// from the API's store, which the handlers feed (apps/api/src/metrics-store.ts).

/** Colours told apart with every common colour-vision deficiency (Okabe and Ito), on light and dark backgrounds. */
const COLOURS = ["#0072B2", "#D55E00", "#009E73"] as const;

interface Chart {
  title: string;
  format: (value: number) => string;
  series: { label: string; pick: (r: MetricRate) => number | undefined }[];
}

const CHARTS: Chart[] = [
  { title: "CPU", format: formatCores, series: [{ label: "In use", pick: (r) => r.cpuCores }] },
  {
    title: "Memory",
    format: formatBytes,
    series: [
      { label: "QEMU's resident memory", pick: (r) => r.memoryBytes },
      { label: "Used by the guest", pick: (r) => r.guestUsedBytes },
    ],
  },
  {
    title: "Network",
    format: formatRate,
    series: [
      { label: "Received", pick: (r) => r.rxBytesPerSecond },
      { label: "Sent", pick: (r) => r.txBytesPerSecond },
    ],
  },
  {
    title: "Disk",
    format: formatRate,
    series: [
      { label: "Read", pick: (r) => r.readBytesPerSecond },
      { label: "Written", pick: (r) => r.writeBytesPerSecond },
    ],
  },
];

function Graph({ chart, rates }: { chart: Chart; rates: MetricRate[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // A series the VM never reports (the guest's memory without a balloon driver) is not drawn.
  const series = chart.series.filter((s) => rates.some((r) => s.pick(r) !== undefined));
  const data: uPlot.AlignedData = [
    rates.map((r) => r.t / 1000),
    ...series.map((s) => rates.map((r) => s.pick(r) ?? null)),
  ];
  const shape = series.map((s) => s.label).join("|");

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let disposed = false;
    void import("uplot").then(({ default: UPlot }) => {
      if (disposed) return;
      plot.current = new UPlot(
        {
          width: Math.max(280, el.clientWidth),
          height: 180,
          series: [
            {},
            ...series.map((s, i) => ({
              label: s.label,
              stroke: COLOURS[i % COLOURS.length],
              width: 2,
              value: (_u: uPlot, v: number | null) => (v === null ? "—" : chart.format(v)),
            })),
          ],
          // Times as hours and minutes, and seconds too while the graph spans less than ten minutes.
          axes: [
            {
              stroke: "currentColor",
              space: 80,
              values: (_u, splits) => {
                const short = (splits.at(-1) ?? 0) - (splits[0] ?? 0) < 600;
                return splits.map((t) =>
                  new Date(t * 1000).toLocaleTimeString([], {
                    hour: "2-digit",
                    minute: "2-digit",
                    ...(short ? { second: "2-digit" } : {}),
                  }),
                );
              },
            },
            { stroke: "currentColor", size: 80, values: (_u, values) => values.map((v) => chart.format(v)) },
          ],
          scales: { y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
        },
        data,
        el,
      );
    });
    const resize = new ResizeObserver(() => {
      plot.current?.setSize({ width: Math.max(280, el.clientWidth), height: 180 });
    });
    resize.observe(el);
    return () => {
      disposed = true;
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // A new plot only when the series drawn change; new points go through setData.
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return (
    <figure className="graph" data-testid={`graph-${chart.title.toLowerCase()}`} data-points={rates.length}>
      <figcaption>{chart.title}</figcaption>
      <div ref={box} aria-hidden="true" />
    </figure>
  );
}

export function MetricsGraphs({ namespace, name, running }: { namespace: string; name: string; running: boolean }) {
  const trpc = useTRPC();
  const [minutes, setMinutes] = useState<15 | 60>(15);
  const metrics = useQuery({
    ...trpc.vms.metrics.queryOptions({ namespace, name, minutes }),
    enabled: running,
    refetchInterval: 15_000,
  });
  if (!running) return <p role="status">The VM is not running: its graphs begin with its next start.</p>;
  if (metrics.error)
    return (
      <p className="error" role="alert">
        {describeError(metrics.error).message}
      </p>
    );
  const rates = metrics.data?.rates ?? [];
  return (
    <section aria-label="Metrics">
      <div className="toolbar" role="group" aria-label="Time range">
        {([15, 60] as const).map((m) => (
          <button
            key={m}
            type="button"
            className="secondary"
            aria-pressed={minutes === m}
            onClick={() => {
              setMinutes(m);
            }}
          >
            {m === 15 ? "Last 15 minutes" : "Last hour"}
          </button>
        ))}
        <span className="spacer" />
        <span className="muted" role="status">
          {metrics.data === undefined
            ? "Loading…"
            : rates.length === 0
              ? "No figures yet: the first come " +
                `within ${String(2 * (metrics.data.sampleSeconds || 15))} s of the VM ` +
                "running."
              : `${metrics.data.source === "prometheus" ? "From Prometheus: a" : "A"} point ` +
                `every ${String(metrics.data.sampleSeconds)} s, kept current.`}
        </span>
      </div>
      {rates.length > 0 && (
        <>
          <div className="graphs">
            {CHARTS.map((c) => (
              <Graph key={c.title} chart={c} rates={rates} />
            ))}
          </div>
          <details>
            <summary>The figures as a table</summary>
            <table className="vms" data-testid="metrics-table">
              <caption className="visually-hidden">CPU, memory, network and disk of {name}, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">CPU (cores)</th>
                  <th scope="col">Memory (QEMU)</th>
                  <th scope="col">Used by the guest</th>
                  <th scope="col">Received</th>
                  <th scope="col">Sent</th>
                  <th scope="col">Read</th>
                  <th scope="col">Written</th>
                  <th scope="col">Read IOPS</th>
                  <th scope="col">Write IOPS</th>
                </tr>
              </thead>
              <tbody>
                {[...rates]
                  .reverse()
                  .slice(0, 60)
                  .map((r) => (
                    <tr key={r.t}>
                      <td>
                        <time dateTime={new Date(r.t).toISOString()}>{new Date(r.t).toLocaleTimeString()}</time>
                      </td>
                      <td className="number">{r.cpuCores.toFixed(3)}</td>
                      <td className="number">{formatBytes(r.memoryBytes)}</td>
                      <td className="number">
                        {r.guestUsedBytes === undefined ? "not reported" : formatBytes(r.guestUsedBytes)}
                      </td>
                      <td className="number">{formatRate(r.rxBytesPerSecond)}</td>
                      <td className="number">{formatRate(r.txBytesPerSecond)}</td>
                      <td className="number">{formatRate(r.readBytesPerSecond)}</td>
                      <td className="number">{formatRate(r.writeBytesPerSecond)}</td>
                      <td className="number">{r.readIops.toFixed(1)}</td>
                      <td className="number">{r.writeIops.toFixed(1)}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </details>
        </>
      )}
    </section>
  );
}
