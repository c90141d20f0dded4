import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { FakeClock } from "./fake-clock.ts";
import { createWorkQueueMetrics } from "./metrics.ts";
import { WorkQueue } from "./queue.ts";

/** The value of one series: a metric, the queue it is labelled with and, for histograms, the series name. */
async function valueOf(
  registry: Registry,
  metric: string,
  queue: string,
  series = metric,
): Promise<number | undefined> {
  const metrics = await registry.getMetricsAsJSON();
  const values = metrics.find((m) => m.name === metric)?.values ?? [];
  const matching = values.find(
    (v) => v.labels.name === queue && ((v as { metricName?: string }).metricName ?? metric) === series,
  );
  return matching?.value;
}

function setUp() {
  const clock = new FakeClock();
  const registry = new Registry();
  const metrics = createWorkQueueMetrics(registry);
  const newQueue = (name: string) => new WorkQueue({ name, clock, metrics });
  return { clock, registry, newQueue };
}

describe("work queue metrics", () => {
  it("start at zero for a new queue", async () => {
    const { registry, newQueue } = setUp();
    newQueue("vmi");
    const zeros = await Promise.all([
      valueOf(registry, "workqueue_depth", "vmi"),
      valueOf(registry, "workqueue_adds_total", "vmi"),
      valueOf(registry, "workqueue_retries_total", "vmi"),
      valueOf(registry, "workqueue_longest_running_processor_seconds", "vmi"),
      valueOf(registry, "workqueue_queue_duration_seconds", "vmi", "workqueue_queue_duration_seconds_count"),
      valueOf(registry, "workqueue_work_duration_seconds", "vmi", "workqueue_work_duration_seconds_count"),
    ]);
    expect(zeros).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("count adds, depth, retries, and time queued, working and running, per queue", async () => {
    const { clock, registry, newQueue } = setUp();
    const vmi = newQueue("vmi");
    const vm = newQueue("vm");

    vmi.add("a");
    vmi.add("b");
    vmi.add("a");
    vm.add("x");
    expect(await valueOf(registry, "workqueue_adds_total", "vmi")).toBe(2);
    expect(await valueOf(registry, "workqueue_depth", "vmi")).toBe(2);
    expect(await valueOf(registry, "workqueue_depth", "vm")).toBe(1);

    clock.advance(500);
    const key = String(await vmi.get());
    expect(await valueOf(registry, "workqueue_depth", "vmi")).toBe(1);
    expect(
      await valueOf(registry, "workqueue_queue_duration_seconds", "vmi", "workqueue_queue_duration_seconds_sum"),
    ).toBe(0.5);

    clock.advance(2000);
    expect(await valueOf(registry, "workqueue_longest_running_processor_seconds", "vmi")).toBe(2);
    expect(await valueOf(registry, "workqueue_longest_running_processor_seconds", "vm")).toBe(0);

    vmi.done(key);
    expect(
      await valueOf(registry, "workqueue_work_duration_seconds", "vmi", "workqueue_work_duration_seconds_sum"),
    ).toBe(2);
    expect(
      await valueOf(registry, "workqueue_work_duration_seconds", "vmi", "workqueue_work_duration_seconds_count"),
    ).toBe(1);
    expect(await valueOf(registry, "workqueue_longest_running_processor_seconds", "vmi")).toBe(0);

    vmi.addRateLimited("a");
    vmi.addRateLimited("c");
    expect(await valueOf(registry, "workqueue_retries_total", "vmi")).toBe(2);
    expect(await valueOf(registry, "workqueue_retries_total", "vm")).toBe(0);
  });

  it("count a key added while it is processed as waiting, and measure its wait from that add", async () => {
    const { clock, registry, newQueue } = setUp();
    const queue = newQueue("vmi");
    queue.add("a");
    await queue.get();
    clock.advance(100);
    queue.add("a");
    expect(await valueOf(registry, "workqueue_depth", "vmi")).toBe(1);
    clock.advance(300);
    queue.done("a");
    await queue.get();
    expect(await valueOf(registry, "workqueue_depth", "vmi")).toBe(0);
    expect(
      await valueOf(registry, "workqueue_queue_duration_seconds", "vmi", "workqueue_queue_duration_seconds_sum"),
    ).toBe(0.3);
  });

  it("are served in the Prometheus text format", async () => {
    const { registry, newQueue } = setUp();
    newQueue("vmi").add("a");
    expect(await registry.getSingleMetricAsString("workqueue_adds_total")).toContain(
      'workqueue_adds_total{name="vmi"} 1',
    );
  });
});
