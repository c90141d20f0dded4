import type { DomainStats } from "@kubevirt-ts/launcher-protocol";
import { describe, expect, it } from "vitest";
import { MetricsStore } from "./metrics-store.ts";

const stats = (cpuSeconds: number, rxBytes: number, rssKiB = 1024): DomainStats => ({
  cpu: { timeNs: cpuSeconds * 1e9 },
  vcpus: [],
  memory: { rssKiB },
  interfaces: [
    {
      name: "default",
      rxBytes,
      rxPackets: 0,
      rxErrors: 0,
      rxDrops: 0,
      txBytes: 0,
      txPackets: 0,
      txErrors: 0,
      txDrops: 0,
    },
  ],
  disks: [
    {
      name: "root",
      readBytes: 0,
      readRequests: 0,
      readTimeNs: 0,
      writeBytes: 0,
      writeRequests: 0,
      writeTimeNs: 0,
      flushRequests: 0,
      flushTimeNs: 0,
    },
  ],
});
const node = (name: string, cpuSeconds: number, rxBytes: number) => ({
  vmis: [{ namespace: "shop", name, stats: stats(cpuSeconds, rxBytes) }],
});

describe("MetricsStore", () => {
  it("turns the handlers' counters into rates per second, and memory as it was", () => {
    const store = new MetricsStore({ sampleSeconds: 15, retentionMinutes: 60, maxVmis: 10 });
    store.record(0, [node("web", 10, 0)]);
    store.record(15_000, [node("web", 25, 15_000)]);
    store.record(30_000, [node("web", 32.5, 15_000)]);
    expect(store.rates("shop", "web", 15, 30_000)).toEqual([
      expect.objectContaining({
        t: 15_000,
        cpuCores: 1,
        rxBytesPerSecond: 1000,
        memoryBytes: 1024 * 1024,
        guestUsedBytes: undefined,
      }),
      expect.objectContaining({ t: 30_000, cpuCores: 0.5, rxBytesPerSecond: 0 }),
    ]);
    expect(store.rates("shop", "other", 15, 30_000)).toEqual([]);
  });

  it("starts afresh when the counters go back (a restarted VM), and keeps the window asked for", () => {
    const store = new MetricsStore({ sampleSeconds: 15, retentionMinutes: 60, maxVmis: 10 });
    store.record(0, [node("web", 100, 0)]);
    store.record(15_000, [node("web", 1, 0)]);
    store.record(30_000, [node("web", 16, 0)]);
    expect(store.rates("shop", "web", 60, 30_000).map((r) => r.cpuCores)).toEqual([1]);
    expect(store.rates("shop", "web", 0.1, 30_000).map((r) => r.t)).toEqual([30_000]);
  });

  it(
    "holds no more than its bounds: points beyond the retention, VMIs gone that " +
      "long, the least recently seen past maxVmis",
    () => {
      const store = new MetricsStore({ sampleSeconds: 60, retentionMinutes: 2, maxVmis: 2 });
      for (let i = 0; i < 10; i += 1) store.record(i * 60_000, [node("web", i, 0)]);
      expect(store.rates("shop", "web", 60, 9 * 60_000)).toHaveLength(2);
      store.record(10 * 60_000, [node("a", 1, 0), node("b", 1, 0)]);
      expect(store.size).toBe(2);
      expect(store.rates("shop", "web", 60, 10 * 60_000)).toEqual([]);
      store.record(20 * 60_000, []);
      expect(store.size).toBe(0);
    },
  );
});
