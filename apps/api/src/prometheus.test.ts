import { describe, expect, it } from "vitest";
import { PROMQL, figuresQuery, ratesFromSamples, vmiSelector } from "./prometheus.ts";

describe("the graphs from Prometheus", () => {
  it("asks for one VMI by KubeVirt's names and labels", () => {
    const selector = vmiSelector("team-a", "web-1");
    expect(selector).toBe('namespace="team-a",name="web-1"');
    expect(PROMQL.cpuCores(selector, "60s")).toBe(
      'sum(rate(kubevirt_vmi_cpu_usage_seconds_total{namespace="team-a",name="web-1"}[60s]))',
    );
    expect(PROMQL.guestUsedBytes(selector, "60s")).toBe(
      'sum(kubevirt_vmi_memory_used_bytes{namespace="team-a",name="web-1"})',
    );
    expect(vmiSelector('a"b', "c\\d")).toBe('namespace="a\\"b",name="c\\\\d"');
  });

  it("asks for every figure in one query, each labelled with its name", () => {
    const query = figuresQuery('name="web-1"', "60s");
    expect(query.split(" or ")).toHaveLength(Object.keys(PROMQL).length);
    expect(query).toContain(
      'label_replace(sum(rate(kubevirt_vmi_cpu_usage_seconds_total{name="web-1"}[60s])), "figure", "cpuCores", "", "")',
    );
  });

  it("makes a point at each time CPU has one, in milliseconds, with the other figures at that time", () => {
    const rates = ratesFromSamples({
      cpuCores: [
        [1_700_000_015, "0.5"],
        [1_700_000_000, "0.25"],
      ],
      memoryBytes: [[1_700_000_000, "1048576"]],
      guestUsedBytes: [[1_700_000_015, "524288"]],
      readIops: [[1_700_000_015, "NaN"]],
    });
    expect(rates.map((r) => r.t)).toEqual([1_700_000_000_000, 1_700_000_015_000]);
    expect(rates[0]).toMatchObject({ cpuCores: 0.25, memoryBytes: 1048576, guestUsedBytes: undefined, readIops: 0 });
    expect(rates[1]).toMatchObject({ cpuCores: 0.5, memoryBytes: 0, guestUsedBytes: 524288, readIops: 0 });
  });

  it("has no points without CPU figures (a VMI Prometheus has not scraped)", () => {
    expect(ratesFromSamples({ memoryBytes: [[1, "5"]] })).toEqual([]);
  });
});
