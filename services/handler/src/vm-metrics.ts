import type { DomainStats } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";
import { Counter, Gauge, type Registry } from "prom-client";
import type { ConsoleTarget } from "./console-server.ts";
import { limits } from "./limits.ts";

// KubeVirt's VM metrics, with its names, labels and units, from libvirt's
// domain stats of each running VMI on this node (its launcher's
// domainStats): CPU and vCPU time, memory, network and disk traffic. They
// are read when /metrics is scraped or the API's store asks (at most once a
// second, each launcher given 5 s), so nothing is polled in between.

const BASE_LABELS = ["node", "namespace", "name"] as const;
const KIB = 1024;
const NS = 1e9;

type Sample = [labels: Record<string, string>, value: number];
interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge";
  labels?: readonly string[];
  values: (stats: DomainStats) => Sample[];
}

/** What a launcher's names may add to /metrics, each VMI: limits.metricDevicesPerVmi and limits.metricLabelLength. */
export const METRIC_DEVICES_PER_VMI = limits.metricDevicesPerVmi;
export const METRIC_LABEL_MAX_LENGTH = limits.metricLabelLength;

/**
 * A launcher's device name as a label value: cut to METRIC_LABEL_MAX_LENGTH (prom-client escapes quotes, backslashes
 * and newlines).
 */
const labelValue = (name: string): string => name.slice(0, METRIC_LABEL_MAX_LENGTH);

const one = (value: number | undefined): Sample[] => (value === undefined ? [] : [[{}, value]]);
const kib = (value: number | undefined): Sample[] => one(value === undefined ? undefined : value * KIB);
const perInterface =
  (pick: (i: DomainStats["interfaces"][number]) => number) =>
  (s: DomainStats): Sample[] =>
    s.interfaces.slice(0, METRIC_DEVICES_PER_VMI).map((i) => [{ interface: labelValue(i.name) }, pick(i)]);
const perDrive =
  (pick: (d: DomainStats["disks"][number]) => number) =>
  (s: DomainStats): Sample[] =>
    s.disks.slice(0, METRIC_DEVICES_PER_VMI).map((d) => [{ drive: labelValue(d.name) }, pick(d)]);

/** Each metric family as KubeVirt's virt-handler names and labels it (docs/metrics.md of KubeVirt). */
export const VM_METRIC_FAMILIES: readonly Family[] = [
  {
    name: "kubevirt_vmi_cpu_usage_seconds_total",
    help: "Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).",
    type: "counter",
    values: (s) => one(s.cpu.timeNs / NS),
  },
  {
    name: "kubevirt_vmi_cpu_user_usage_seconds_total",
    help: "Total CPU time spent in user mode.",
    type: "counter",
    values: (s) => one(s.cpu.userNs === undefined ? undefined : s.cpu.userNs / NS),
  },
  {
    name: "kubevirt_vmi_cpu_system_usage_seconds_total",
    help: "Total CPU time spent in system mode.",
    type: "counter",
    values: (s) => one(s.cpu.systemNs === undefined ? undefined : s.cpu.systemNs / NS),
  },
  {
    name: "kubevirt_vmi_vcpu_seconds_total",
    help: "Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time).",
    type: "counter",
    labels: ["id", "state"],
    values: (s) => s.vcpus.map((v) => [{ id: String(v.id), state: v.state }, v.timeNs / NS]),
  },
  {
    name: "kubevirt_vmi_vcpu_wait_seconds_total",
    help: "Amount of time spent by each vcpu while waiting on I/O.",
    type: "counter",
    labels: ["id"],
    values: (s) =>
      s.vcpus.flatMap((v): Sample[] => (v.waitNs === undefined ? [] : [[{ id: String(v.id) }, v.waitNs / NS]])),
  },
  {
    name: "kubevirt_vmi_vcpu_delay_seconds_total",
    help: "Amount of time spent by each vcpu waiting in the queue instead of running.",
    type: "counter",
    labels: ["id"],
    values: (s) =>
      s.vcpus.flatMap((v): Sample[] => (v.delayNs === undefined ? [] : [[{ id: String(v.id) }, v.delayNs / NS]])),
  },
  {
    name: "kubevirt_vmi_vcpu_count",
    help: "The number of the VMI vCPUs.",
    type: "gauge",
    values: (s) => one(s.vcpus.length),
  },
  {
    name: "kubevirt_vmi_memory_domain_bytes",
    help: "The amount of memory in bytes allocated to the domain.",
    type: "gauge",
    values: (s) => kib(s.memory.domainKiB),
  },
  {
    name: "kubevirt_vmi_memory_actual_balloon_bytes",
    help: "Current balloon size in bytes.",
    type: "gauge",
    values: (s) => kib(s.memory.actualKiB),
  },
  {
    name: "kubevirt_vmi_memory_resident_bytes",
    help: "Resident set size of the process running the domain.",
    type: "gauge",
    values: (s) => kib(s.memory.rssKiB),
  },
  {
    name: "kubevirt_vmi_memory_available_bytes",
    help: "Amount of usable memory as seen by the domain (needs the guest's balloon driver).",
    type: "gauge",
    values: (s) => kib(s.memory.availableKiB),
  },
  {
    name: "kubevirt_vmi_memory_usable_bytes",
    help: "The amount of memory which can be reclaimed by balloon without pushing the guest system to swap.",
    type: "gauge",
    values: (s) => kib(s.memory.usableKiB),
  },
  {
    name: "kubevirt_vmi_memory_unused_bytes",
    help: "The amount of memory left completely unused by the system.",
    type: "gauge",
    values: (s) => kib(s.memory.unusedKiB),
  },
  {
    name: "kubevirt_vmi_memory_used_bytes",
    help: "Amount of `used` memory as seen by the domain (available less unused).",
    type: "gauge",
    values: (s) =>
      kib(
        s.memory.availableKiB !== undefined && s.memory.unusedKiB !== undefined
          ? s.memory.availableKiB - s.memory.unusedKiB
          : undefined,
      ),
  },
  {
    name: "kubevirt_vmi_memory_swap_in_traffic_bytes",
    help: "The total amount of data read from swap space of the guest in bytes.",
    type: "gauge",
    values: (s) => kib(s.memory.swapInKiB),
  },
  {
    name: "kubevirt_vmi_memory_swap_out_traffic_bytes",
    help: "The total amount of memory written out to swap space of the guest in bytes.",
    type: "gauge",
    values: (s) => kib(s.memory.swapOutKiB),
  },
  {
    name: "kubevirt_vmi_memory_pgmajfault_total",
    help: "The number of page faults when disk IO was required.",
    type: "counter",
    values: (s) => one(s.memory.majorFaults),
  },
  {
    name: "kubevirt_vmi_memory_pgminfault_total",
    help: "The number of other page faults, when disk IO was not required.",
    type: "counter",
    values: (s) => one(s.memory.minorFaults),
  },
  {
    name: "kubevirt_vmi_network_receive_bytes_total",
    help: "Total network traffic received in bytes.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.rxBytes),
  },
  {
    name: "kubevirt_vmi_network_transmit_bytes_total",
    help: "Total network traffic transmitted in bytes.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.txBytes),
  },
  {
    name: "kubevirt_vmi_network_receive_packets_total",
    help: "Total network traffic received packets.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.rxPackets),
  },
  {
    name: "kubevirt_vmi_network_transmit_packets_total",
    help: "Total network traffic transmitted packets.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.txPackets),
  },
  {
    name: "kubevirt_vmi_network_receive_errors_total",
    help: "Total network received error packets.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.rxErrors),
  },
  {
    name: "kubevirt_vmi_network_transmit_errors_total",
    help: "Total network transmitted error packets.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.txErrors),
  },
  {
    name: "kubevirt_vmi_network_receive_packets_dropped_total",
    help: "The total number of rx packets dropped on vNIC interfaces.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.rxDrops),
  },
  {
    name: "kubevirt_vmi_network_transmit_packets_dropped_total",
    help: "The total number of tx packets dropped on vNIC interfaces.",
    type: "counter",
    labels: ["interface"],
    values: perInterface((i) => i.txDrops),
  },
  {
    name: "kubevirt_vmi_storage_read_traffic_bytes_total",
    help: "Total number of bytes read from storage.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.readBytes),
  },
  {
    name: "kubevirt_vmi_storage_write_traffic_bytes_total",
    help: "Total number of written bytes.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.writeBytes),
  },
  {
    name: "kubevirt_vmi_storage_iops_read_total",
    help: "Total number of I/O read operations.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.readRequests),
  },
  {
    name: "kubevirt_vmi_storage_iops_write_total",
    help: "Total number of I/O write operations.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.writeRequests),
  },
  {
    name: "kubevirt_vmi_storage_read_times_seconds_total",
    help: "Total time spent on read operations.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.readTimeNs / NS),
  },
  {
    name: "kubevirt_vmi_storage_write_times_seconds_total",
    help: "Total time spent on write operations.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.writeTimeNs / NS),
  },
  {
    name: "kubevirt_vmi_storage_flush_requests_total",
    help: "Total storage flush requests.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.flushRequests),
  },
  {
    name: "kubevirt_vmi_storage_flush_times_seconds_total",
    help: "Total time spent on cache flushing.",
    type: "counter",
    labels: ["drive"],
    values: perDrive((d) => d.flushTimeNs / NS),
  },
];

/** How long one sample serves other readers (the families of one scrape, the API's store). */
const SAMPLE_FRESH_MS = 1_000;
const LAUNCHER_TIMEOUT_MS = 5_000;

/** One running VMI's domain stats. */
export interface VmiStats {
  namespace: string;
  name: string;
  stats: DomainStats;
}

export interface StatsSamplerOptions {
  /** The VMIs running on this node, each with its launcher pod. */
  running: () => ConsoleTarget[];
  stats: (target: ConsoleTarget, timeoutMs: number) => Promise<DomainStats>;
  log: Logger;
}

/**
 * The domain stats of every running VMI on this node, each launcher asked at most once a second (each given 5 s),
 * whoever reads them: /metrics and the API's store (the console server's stats route, node-contract's handlerRoutes).
 */
export function createStatsSampler(options: StatsSamplerOptions): () => Promise<VmiStats[]> {
  let last: { at: number; samples: Promise<VmiStats[]> } | undefined;
  return () => {
    if (last && Date.now() - last.at < SAMPLE_FRESH_MS) return last.samples;
    const samples = Promise.all(
      options.running().map(async (target): Promise<VmiStats[]> => {
        const namespace = target.vmi.metadata.namespace ?? "";
        const name = target.vmi.metadata.name ?? "";
        try {
          return [{ namespace, name, stats: await options.stats(target, LAUNCHER_TIMEOUT_MS) }];
        } catch (error) {
          // A launcher that cannot answer now is left out of this sample, as a VMI that is not running.
          options.log.debug("no domain stats from a launcher", { namespace, vmi: name, error });
          return [];
        }
      }),
    ).then((all) => all.flat());
    last = { at: Date.now(), samples };
    return samples;
  };
}

/** Registers KubeVirt's VM metric families, filled from the sampler when /metrics is scraped. */
export function registerVmMetrics(options: {
  registry: Registry;
  nodeName: string;
  sample: () => Promise<VmiStats[]>;
}): void {
  for (const family of VM_METRIC_FAMILIES) {
    const labelNames = [...BASE_LABELS, ...(family.labels ?? [])];
    const fill = async (metric: Counter | Gauge) => {
      const samples = await options.sample();
      metric.reset();
      for (const { namespace, name, stats } of samples) {
        const labels = { node: options.nodeName, namespace, name };
        for (const [extra, value] of family.values(stats)) {
          if (metric instanceof Counter) metric.inc({ ...labels, ...extra }, value);
          else metric.set({ ...labels, ...extra }, value);
        }
      }
    };
    if (family.type === "counter")
      new Counter({
        name: family.name,
        help: family.help,
        labelNames,
        registers: [options.registry],
        async collect() {
          await fill(this);
        },
      });
    else
      new Gauge({
        name: family.name,
        help: family.help,
        labelNames,
        registers: [options.registry],
        async collect() {
          await fill(this);
        },
      });
  }
}
