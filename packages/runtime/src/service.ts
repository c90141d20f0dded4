import { Registry, collectDefaultMetrics } from "prom-client";
import { type LogLevel, type Logger, createLogger } from "./log.ts";
import { type MetricsAccess, type OpsServer, type ReadinessCheck, startOpsServer } from "./ops-server.ts";

// The life of a kubevirt-ts process: start the operations endpoint, start the
// work, and on SIGTERM or SIGINT stop the work, then the endpoint, within a
// deadline, and exit 0.

/**
 * How often the event loop's delay is sampled for the nodejs_eventloop_lag metrics. prom-client's 10 ms wakes an
 * idle process 100 times a second, about 0.4 % of a core: every launcher (one per VM) paid it. Once a second still
 * catches a blocked loop, whose timer fires late by the time it was blocked.
 */
const EVENT_LOOP_SAMPLE_MS = 1_000;

export interface ServiceContext {
  log: Logger;
  registry: Registry;
  /** Aborted when the process is asked to stop. */
  signal: AbortSignal;
}

export interface ServiceDefinition {
  name: string;
  opsPort: number;
  logLevel?: LogLevel;
  checks?: (ctx: ServiceContext) => Record<string, ReadinessCheck>;
  /** Paths of its own on the operations endpoint, each answered by a check (see OpsServerOptions.endpoints). */
  endpoints?: (ctx: ServiceContext) => Record<string, ReadinessCheck>;
  /** Who may read /metrics (see OpsServerOptions.metricsAccess); anyone when not given. */
  metricsAccess?: (ctx: ServiceContext) => MetricsAccess;
  /** Starts the work; the returned function stops it. */
  start?: (ctx: ServiceContext) => Promise<() => Promise<void>>;
  /** How long stopping may take before the process exits anyway. */
  shutdownTimeoutMs?: number;
}

export interface RunningService {
  ops: OpsServer;
  ctx: ServiceContext;
  /** Stops the work and the endpoint; safe to call more than once. */
  stop(reason: string): Promise<void>;
}

export async function startService(definition: ServiceDefinition): Promise<RunningService> {
  const log = createLogger({ component: definition.name, level: definition.logLevel ?? "info" });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const abort = new AbortController();
  const ctx: ServiceContext = { log, registry, signal: abort.signal };
  const ops = await startOpsServer({
    port: definition.opsPort,
    registry,
    checks: definition.checks?.(ctx) ?? {},
    endpoints: definition.endpoints?.(ctx) ?? {},
    metricsAccess: definition.metricsAccess?.(ctx),
  });
  log.info("operations endpoint listening", { port: ops.port });
  const stopWork = (await definition.start?.(ctx)) ?? (() => Promise.resolve());
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      log.info("stopping", { reason });
      abort.abort(reason);
      await stopWork();
      await ops.close();
      log.info("stopped");
    })();
    return stopping;
  };
  return { ops, ctx, stop };
}

/**
 * The last resort of a process: an exception nothing caught, or a rejection
 * nothing handled, is a bug whose effects on the process's state nobody
 * knows. As Node recommends, it is logged (one line with the component's
 * name and the stack) and the process exits 1 for Kubernetes to restart it;
 * it never carries on in an unknown state. Inputs from the network, such as
 * what a launcher sends, are checked where they arrive and never reach this.
 */
export function exitOnUncaughtErrors(log: Logger, exit: (code: number) => void = (code) => process.exit(code)): void {
  process.on("uncaughtException", (error, origin) => {
    log.error("uncaught exception; exiting", { error, origin });
    exit(1);
  });
  process.on("unhandledRejection", (reason) => {
    log.error("unhandled promise rejection; exiting", { error: reason });
    exit(1);
  });
}

/** Runs a service as the main program of a process until it is signalled. */
export async function runService(definition: ServiceDefinition): Promise<void> {
  exitOnUncaughtErrors(createLogger({ component: definition.name, level: definition.logLevel ?? "info" }));
  // The handlers are there before the service starts: a signal while it starts (a pod deleted at once) is kept and
  // carried out once it has started, never left to Node's default, which would end the process without stopping the
  // work.
  const state: { service?: RunningService; signalled?: NodeJS.Signals } = {};
  const onSignal = (signal: NodeJS.Signals) => {
    if (state.service) shutdown(state.service, signal);
    else state.signalled = signal;
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  state.service = await startService(definition);
  if (state.signalled) shutdown(state.service, state.signalled);

  function shutdown(started: RunningService, signal: NodeJS.Signals): void {
    const timer = setTimeout(() => {
      started.ctx.log.error("shutdown took too long; exiting", { timeoutMs: definition.shutdownTimeoutMs ?? 20_000 });
      process.exit(1);
    }, definition.shutdownTimeoutMs ?? 20_000);
    timer.unref();
    started.stop(signal).then(
      // The work may say it ended in failure (process.exitCode), as a launcher whose guest failed its liveness probe
      // does.
      () => process.exit(typeof process.exitCode === "number" ? process.exitCode : 0),
      (error: unknown) => {
        started.ctx.log.error("shutdown failed", { error });
        process.exit(1);
      },
    );
  }
}

/** An error that carries the status (HTTP status, or websocket close code) its answer should have. */
export class StatusError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}
