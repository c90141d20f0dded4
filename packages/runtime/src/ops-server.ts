import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

// The operations endpoint every process serves: /healthz (the process is
// alive), /readyz (it can do its work: each named check passes), /metrics
// (Prometheus text format), and any paths of its own answered the way
// /readyz is (the launcher's probes of its guest). /metrics can be kept to
// the callers a MetricsAccess lets in (their bearer token checked with the
// API server, as kube-rbac-proxy does).

/** A named readiness check; it returns why it fails, or undefined when it passes. */
export type ReadinessCheck = () => Promise<string | undefined> | string | undefined;

/**
 * Why a caller may not read /metrics: 401 (no or an unknown token), 403 (not allowed), 429 or 503 (cannot tell now).
 */
export interface MetricsRefusal {
  status: 401 | 403 | 429 | 503;
  reason: string;
}

/** Decides on a caller of /metrics by its Authorization header: undefined lets it in. */
export type MetricsAccess = (authorization: string | undefined) => Promise<MetricsRefusal | undefined>;

export interface OpsServerOptions {
  port: number;
  host?: string;
  registry: Registry;
  checks?: Record<string, ReadinessCheck>;
  /** More paths answered as /readyz is, each by one check: 200 when it passes, 503 with its reason when it fails. */
  endpoints?: Record<string, ReadinessCheck>;
  /** Who may read /metrics; anyone who reaches the port when not given. */
  metricsAccess?: MetricsAccess;
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

async function runChecks(checks: Record<string, ReadinessCheck>): Promise<Record<string, string>> {
  const failures: Record<string, string> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        const problem = await check();
        if (problem !== undefined) failures[name] = problem;
      } catch (error) {
        failures[name] = error instanceof Error ? error.message : String(error);
      }
    }),
  );
  return failures;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { "content-type": contentType, "cache-control": "no-store" });
  res.end(body);
}

async function handle(req: IncomingMessage, res: ServerResponse, options: OpsServerOptions): Promise<void> {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, 405, "text/plain", "method not allowed\n");
  } else if (path === "/healthz") {
    send(res, 200, "application/json", '{"status":"ok"}\n');
  } else if (path === "/readyz") {
    const failures = await runChecks(options.checks ?? {});
    const ready = Object.keys(failures).length === 0;
    send(
      res,
      ready ? 200 : 503,
      "application/json",
      `${JSON.stringify(ready ? { status: "ok" } : { status: "not ready", failures })}\n`,
    );
  } else if (options.endpoints && Object.hasOwn(options.endpoints, path)) {
    const failures = await runChecks({ [path]: options.endpoints[path] ?? (() => undefined) });
    const failure = failures[path];
    send(
      res,
      failure === undefined ? 200 : 503,
      "application/json",
      `${JSON.stringify(failure === undefined ? { status: "ok" } : { status: "failing", reason: failure })}\n`,
    );
  } else if (path === "/metrics") {
    const refusal = await options.metricsAccess?.(req.headers.authorization);
    if (refusal) send(res, refusal.status, "text/plain", `${refusal.reason}\n`);
    else send(res, 200, options.registry.contentType, await options.registry.metrics());
  } else {
    send(res, 404, "text/plain", "not found: try /healthz, /readyz or /metrics\n");
  }
}

export function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    handle(req, res, options).catch((error: unknown) => {
      send(res, 500, "text/plain", `${String(error)}\n`);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => {
              done();
            });
            server.closeAllConnections();
          }),
      });
    });
  });
}
