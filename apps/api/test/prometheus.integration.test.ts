import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { type StartedPrometheus, freePort, startPrometheus } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { createTRPCClient, httpLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { PrometheusRates } from "../src/prometheus.ts";
import type { AppRouter } from "../src/trpc/router.ts";
import { type StartedApi, startApi, users } from "./harness.ts";

// The dashboard's graphs from a real Prometheus (built from its Go module by
// hack/build-prometheus.sh), as the chart's metrics.prometheusUrl gives it:
// Prometheus scrapes, every second, an exposition of one VMI's figures under
// KubeVirt's names and labels whose counters grow at known rates, and the
// API's vms.metrics answers with those rates, asked of Prometheus as the user
// who may read the VMI.

const log = createLogger({ component: "prometheus-test", level: "error" });
const MiB = 1024 * 1024;
let prometheus: StartedPrometheus | undefined;
let exporter: ReturnType<typeof createHttpServer> | undefined;
let api: StartedApi | undefined;
const started = Date.now();

/**
 * The figures of one VMI `seconds` after the test began: half a core busy, 1,000 B/s received, 64 KiB/s written, 60 MiB
 * used in the guest.
 */
function exposition(namespace: string, seconds: number): string {
  const labels = `node="node-1",namespace="${namespace}",name="web-1"`;
  return [
    `kubevirt_vmi_cpu_usage_seconds_total{${labels}} ${String(0.5 * seconds)}`,
    `kubevirt_vmi_memory_resident_bytes{${labels}} ${String(200 * MiB)}`,
    `kubevirt_vmi_memory_used_bytes{${labels}} ${String(60 * MiB)}`,
    `kubevirt_vmi_network_receive_bytes_total{${labels},interface="default"} ${String(1000 * seconds)}`,
    `kubevirt_vmi_network_transmit_bytes_total{${labels},interface="default"} 0`,
    `kubevirt_vmi_storage_write_traffic_bytes_total{${labels},drive="vda"} ${String(65536 * seconds)}`,
    `kubevirt_vmi_storage_iops_write_total{${labels},drive="vda"} ${String(16 * seconds)}`,
    "",
  ].join("\n");
}

let namespaceOfFigures = "";

beforeAll(async () => {
  exporter = createHttpServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(exposition(namespaceOfFigures, (Date.now() - started) / 1000));
  });
  exporter.listen(0, "127.0.0.1");
  await once(exporter, "listening");
  const exporterPort = (exporter.address() as AddressInfo).port;
  prometheus = await startPrometheus({
    config:
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: handlers\n    static_configs:\n " +
      `     - targets: ["127.0.0.1:${String(exporterPort)}"]\n`,
  });
  api = await startApi(log, { metrics: new PrometheusRates(prometheus.url, { sampleSeconds: 1, scrapeSeconds: 1 }) });
}, 45 * 60_000);

afterAll(async () => {
  await api?.stop();
  await prometheus?.stop();
  exporter?.close();
});

describe("the graphs from Prometheus (metrics.prometheusUrl)", () => {
  test("answer a VM's rates from KubeVirt's series, to who may read its VMI, and say where they come from", async ({
    kubeConfig,
    namespace,
  }) => {
    namespaceOfFigures = namespace;
    const { viewer } = await users(kubeConfig, namespace);
    const client = createTRPCClient<AppRouter>({
      links: [httpLink({ url: `${api?.url ?? ""}/trpc`, headers: { authorization: `Bearer ${viewer}` } })],
    });
    // The VMI is what the permission is asked on; nothing runs it here.
    const { CustomObjectsApi } = await import("@kubernetes/client-node");
    await kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachineinstances",
      body: {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name: "web-1" },
        spec: { domain: { memory: { guest: "128Mi" }, devices: {} } },
      },
    });
    const query = () => client.vms.metrics.query({ namespace, name: "web-1", minutes: 15 });
    // A rate from the first scrapes, or from a scrape a loaded machine held back, is off its steady value: the
    // answer is asked again until its newest point is steady, and that answer is the one checked.
    let answer = await query();
    await expect
      .poll(
        async () => {
          answer = await query();
          return Math.abs((answer.rates.at(-1)?.cpuCores ?? 0) - 0.5) < 0.05;
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe(true);
    expect(answer).toMatchObject({ source: "prometheus", sampleSeconds: 1 });
    const last = answer.rates.at(-1);
    expect(last?.cpuCores).toBeCloseTo(0.5, 1);
    expect(last?.memoryBytes).toBe(200 * MiB);
    expect(last?.guestUsedBytes).toBe(60 * MiB);
    expect(last?.rxBytesPerSecond).toBeCloseTo(1000, -2);
    expect(last?.writeBytesPerSecond).toBeCloseTo(65536, -4);
    expect(last?.writeIops).toBeCloseTo(16, 0);
    expect(last?.txBytesPerSecond).toBe(0);
    // Points are a second apart, oldest first.
    const times = answer.rates.map((r) => r.t);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect((times.at(-1) ?? 0) - (times.at(-2) ?? 0)).toBe(1000);
    // Another VM's figures are not there; a VMI the user may not read is refused before Prometheus is asked.
    expect(
      await client.vms.metrics.query({ namespace, name: "nothing-here", minutes: 15 }).catch((e: unknown) => String(e)),
    ).toContain("not found");
  });

  test("say that Prometheus did not answer, naming it, when it is not there", async () => {
    const gone = new PrometheusRates(`http://127.0.0.1:${String(await freePort())}`, {
      sampleSeconds: 1,
      scrapeSeconds: 1,
    });
    await expect(gone.rates("any", "web-1", 15)).rejects.toThrow(
      /^Prometheus at http:\/\/127\.0\.0\.1:\d+ did not answer: /,
    );
  });
});
