import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import type { DomainStats } from "@kubevirt-ts/launcher-protocol";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import {
  METRIC_DEVICES_PER_VMI,
  METRIC_LABEL_MAX_LENGTH,
  createStatsSampler,
  registerVmMetrics,
} from "./vm-metrics.ts";

const vmi = (name: string) => ({ metadata: { namespace: "shop", name } }) as VirtualMachineInstance;
const stats = (cpuSeconds: number): DomainStats => ({
  cpu: { timeNs: cpuSeconds * 1e9 },
  vcpus: [{ id: 0, state: "RUNNING", timeNs: 1.5e9 }],
  memory: { domainKiB: 131072, rssKiB: 1000 },
  interfaces: [
    {
      name: "default",
      rxBytes: 4096,
      rxPackets: 10,
      rxErrors: 0,
      rxDrops: 0,
      txBytes: 2048,
      txPackets: 5,
      txErrors: 0,
      txDrops: 0,
    },
  ],
  disks: [
    {
      name: "containerdisk",
      readBytes: 512,
      readRequests: 1,
      readTimeNs: 2e6,
      writeBytes: 0,
      writeRequests: 0,
      writeTimeNs: 0,
      flushRequests: 0,
      flushTimeNs: 0,
    },
  ],
});

describe("registerVmMetrics", () => {
  it(
    "exposes each running VMI's domain stats under KubeVirt's names, labels and " +
      "units, asking each launcher once per scrape",
    async () => {
      const registry = new Registry();
      let asked = 0;
      let cpu = 2.5;
      const sample = createStatsSampler({
        running: () => [
          { vmi: vmi("web"), podUid: "a" },
          { vmi: vmi("gone"), podUid: "b" },
        ],
        stats: (target) => {
          asked += 1;
          return target.podUid === "a" ? Promise.resolve(stats(cpu)) : Promise.reject(new Error("no launcher"));
        },
        log: createLogger({ component: "test", level: "error" }),
      });
      registerVmMetrics({ registry, nodeName: "node-1", sample });
      const text = await registry.metrics();
      const base = 'node="node-1",namespace="shop",name="web"';
      expect(text).toContain("# TYPE kubevirt_vmi_cpu_usage_seconds_total counter");
      expect(text).toContain(`kubevirt_vmi_cpu_usage_seconds_total{${base}} 2.5`);
      expect(text).toContain(`kubevirt_vmi_vcpu_seconds_total{${base},id="0",state="RUNNING"} 1.5`);
      expect(text).toContain(`kubevirt_vmi_memory_domain_bytes{${base}} 134217728`);
      expect(text).toContain(`kubevirt_vmi_memory_resident_bytes{${base}} 1024000`);
      expect(text).toContain(`kubevirt_vmi_network_receive_bytes_total{${base},interface="default"} 4096`);
      expect(text).toContain(`kubevirt_vmi_storage_read_times_seconds_total{${base},drive="containerdisk"} 0.002`);
      // Without the guest's balloon driver there is no guest view of memory: no figure rather than a made-up one.
      expect(text).not.toMatch(/^kubevirt_vmi_memory_used_bytes\{/m);
      // A launcher that did not answer leaves its VMI out; each launcher was asked once for all the families.
      expect(text).not.toContain('name="gone"');
      expect(asked).toBe(2);

      // The next scrape reads the counters anew.
      cpu = 4;
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await registry.metrics()).toContain(`kubevirt_vmi_cpu_usage_seconds_total{${base}} 4`);
    },
  );

  it(
    "labels at most METRIC_DEVICES_PER_VMI interfaces and drives of a VMI, each name " +
      "cut to METRIC_LABEL_MAX_LENGTH and escaped",
    async () => {
      const registry = new Registry();
      const hostile = stats(1);
      const iface = hostile.interfaces[0];
      const disk = hostile.disks[0];
      if (!iface || !disk) throw new Error("the stats have an interface and a disk");
      hostile.interfaces = Array.from({ length: 200 }, (_, i) => ({
        ...iface,
        name: `${String(i).padStart(3, "0")}${"n".repeat(250)}`,
      }));
      hostile.disks = [{ ...disk, name: 'a"b\\c\nd' }];
      const sample = createStatsSampler({
        running: () => [{ vmi: vmi("web"), podUid: "a" }],
        stats: () => Promise.resolve(hostile),
        log: createLogger({ component: "test", level: "error" }),
      });
      registerVmMetrics({ registry, nodeName: "node-1", sample });
      const text = await registry.metrics();
      const rx = text.split("\n").filter((line) => line.startsWith("kubevirt_vmi_network_receive_bytes_total{"));
      expect(rx).toHaveLength(METRIC_DEVICES_PER_VMI);
      expect(rx[0]).toContain(`interface="000${"n".repeat(METRIC_LABEL_MAX_LENGTH - 3)}"`);
      expect(text).toContain(String.raw`drive="a\"b\\c\nd"`);
    },
  );
});
