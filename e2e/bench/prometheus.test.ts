import { describe, expect, it } from "vitest";
import { delta, histogramQuantile, parseMetrics, sampleDelta, sumBy } from "./prometheus.ts";

const before = parseMetrics(`# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="virtualmachineinstances",subresource="",verb="POST"} 3
apiserver_request_total{code="200",resource="virtualmachineinstances",subresource="status",verb="PUT"} 10
apiserver_request_total{code="409",resource="virtualmachineinstances",subresource="status",verb="PUT"} 1
apiserver_request_total{code="200",resource="pods",subresource="",verb="GET"} 7
`);
const after =
  parseMetrics(`apiserver_request_total{code="201",resource="virtualmachineinstances",subresource="",verb="POST"} 5
apiserver_request_total{code="200",resource="virtualmachineinstances",subresource="status",verb="PUT"} 16
apiserver_request_total{code="409",resource="virtualmachineinstances",subresource="status",verb="PUT"} 2
apiserver_request_total{code="200",resource="pods",subresource="",verb="GET"} 7
apiserver_request_total{code="200",resource="pods",subresource="",verb="PATCH",label="a \\"quoted\\" value"} 4
`);
const byVerbResource = (l: Record<string, string>) =>
  `${l.verb ?? ""} ${l.resource ?? ""}${l.subresource ? `/${l.subresource}` : ""}`;

describe("Prometheus counters", () => {
  it("are parsed with their labels, escaped quotes included", () => {
    expect(after.at(-1)).toEqual({
      name: "apiserver_request_total",
      labels: { code: "200", resource: "pods", subresource: "", verb: "PATCH", label: 'a "quoted" value' },
      value: 4,
    });
    expect(before).toHaveLength(4);
  });

  it("sum over the labels left out (code) and grow by their delta; unchanged keys are left out", () => {
    const grown = delta(
      sumBy(before, "apiserver_request_total", byVerbResource),
      sumBy(after, "apiserver_request_total", byVerbResource),
    );
    expect(Object.fromEntries(grown)).toEqual({
      "POST virtualmachineinstances": 2,
      "PUT virtualmachineinstances/status": 7,
      "PATCH pods": 4,
    });
  });

  it("give a histogram's quantile by linear interpolation within its bucket", () => {
    const samples = parseMetrics(`workqueue_queue_duration_seconds_bucket{name="vmi",le="0.001"} 0
workqueue_queue_duration_seconds_bucket{name="vmi",le="0.01"} 50
workqueue_queue_duration_seconds_bucket{name="vmi",le="0.1"} 100
workqueue_queue_duration_seconds_bucket{name="vmi",le="+Inf"} 100
workqueue_queue_duration_seconds_bucket{name="vm",le="+Inf"} 0
`);
    expect(histogramQuantile(samples, "workqueue_queue_duration_seconds", { name: "vmi" }, 0.5)).toBeCloseTo(0.01);
    expect(histogramQuantile(samples, "workqueue_queue_duration_seconds", { name: "vmi" }, 0.75)).toBeCloseTo(0.055);
    expect(histogramQuantile(samples, "workqueue_queue_duration_seconds", { name: "vm" }, 0.5)).toBeUndefined();
  });

  it("give a histogram over an interval as the difference of two scrapes, series matched by all their labels", () => {
    const first = parseMetrics(`h_bucket{le="1",name="vmi"} 10\nh_bucket{le="+Inf",name="vmi"} 10\n`);
    const second = parseMetrics(
      `h_bucket{name="vmi",le="1"} 10\nh_bucket{name="vmi",le="+Inf"} 30\nh_bucket{name="new",le="+Inf"} 2\n`,
    );
    expect(sampleDelta(first, second).map((s) => s.value)).toEqual([0, 20, 2]);
    expect(histogramQuantile(sampleDelta(first, second), "h", { name: "vmi" }, 0.5)).toBe(1);
  });
});
