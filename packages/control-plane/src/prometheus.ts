import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort } from "./ports.ts";
import { logTail, spawnManaged } from "./process.ts";

// A real Prometheus for the tests (the API's graphs, the chart's alerts on the
// local cluster): built from its Go module by hack/build-prometheus.sh, the
// one place that knows its version, and run on loopback with a configuration
// and files of the test's, in a folder of its own that stop() removes.

export interface StartedPrometheus {
  /** Its HTTP API's base, http://127.0.0.1:<port>. */
  readonly url: string;
  /** The folder its configuration and files are in (what the configuration's relative paths name). */
  readonly dir: string;
  /** An instant query's result vector; an answer but success throws, with Prometheus's error. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** The alerts pending or firing now (GET /api/v1/alerts). */
  alerts(): Promise<{ labels: Record<string, string>; state: "pending" | "firing"; activeAt: string }[]>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** prometheus.yml; the names of `files` are paths relative to its folder. */
  config: string;
  /** Further files beside the configuration (rules, credentials), by file name. */
  files?: Record<string, string>;
  /** How long to wait for /-/ready. */
  readyTimeoutMs?: number;
}

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (!res.ok || body.status !== "success")
    throw new Error(`Prometheus answered ${String(res.status)} to ${url}: ${body.error ?? JSON.stringify(body)}`);
  return body.data;
}

export async function startPrometheus(options: PrometheusOptions): Promise<StartedPrometheus> {
  const script = fileURLToPath(new URL("../../../hack/build-prometheus.sh", import.meta.url));
  const { stdout } = await promisify(execFile)(script, { maxBuffer: 1 << 20 });
  const binary = stdout.trim().split("\n").pop();
  if (!binary) throw new Error("hack/build-prometheus.sh printed no binary path");
  const dir = await mkdtemp(join(tmpdir(), "prometheus-"));
  for (const [name, text] of Object.entries({ ...options.files, "prometheus.yml": options.config }))
    await writeFile(join(dir, name), text, { mode: 0o600 });
  const port = await freePort();
  const url = `http://127.0.0.1:${String(port)}`;
  const server = spawnManaged({
    name: "prometheus",
    command: binary,
    args: [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${String(port)}`,
    ],
    logFile: join(dir, "prometheus.log"),
    detached: false,
  });
  const stop = async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
  const state = { exited: false };
  void server.exited.then(() => (state.exited = true));
  // Ready once it has read its configuration and opened its storage; a refusal or a minute without says why.
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  while ((await fetch(`${url}/-/ready`).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline || state.exited) {
      const log = logTail(join(dir, "prometheus.log"));
      await stop();
      throw new Error(`Prometheus (${binary}) did not become ready at ${url}:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    dir,
    async query(expr) {
      const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
        `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      return data.result;
    },
    async alerts() {
      return (
        await api<{ alerts: { labels: Record<string, string>; state: "pending" | "firing"; activeAt: string }[] }>(
          `${url}/api/v1/alerts`,
        )
      ).alerts;
    },
    stop,
  };
}
