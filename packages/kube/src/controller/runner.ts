import { Counter, Histogram, type Registry } from "prom-client";
import type { Logger } from "@kubevirt-ts/runtime";
import type { WorkQueue } from "../workqueue/index.ts";

// Workers that take keys from a controller's queue and reconcile them: a key
// that fails is retried with backoff, a key whose problem no retry can fix is
// dropped (it waits for the object to change), and a key can ask to be looked
// at again later.

export interface ReconcileResult {
  /** Look at this key again after so long, even if nothing changes. */
  requeueAfterMs?: number;
}

export type Reconcile = (key: string) => Promise<ReconcileResult | undefined>;

/** A failure that retrying cannot fix, such as an invalid spec: reported, then left until the object changes. */
export class TerminalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TerminalError";
  }
}

export interface ControllerMetrics {
  observe(controller: string, result: "success" | "error" | "terminal", seconds: number): void;
}

export function createControllerMetrics(registry: Registry): ControllerMetrics {
  const total = new Counter({
    name: "kubevirt_ts_reconcile_total",
    help: "Reconciles by controller and result.",
    labelNames: ["controller", "result"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "kubevirt_ts_reconcile_duration_seconds",
    help: "How long reconciles take, by controller.",
    labelNames: ["controller"] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
    registers: [registry],
  });
  return {
    observe(controller, result, seconds) {
      total.inc({ controller, result });
      duration.observe({ controller }, seconds);
    },
  };
}

export interface RunControllerOptions {
  name: string;
  queue: WorkQueue;
  reconcile: Reconcile;
  workers: number;
  log: Logger;
  metrics?: ControllerMetrics;
}

async function worker(options: RunControllerOptions): Promise<void> {
  const { name, queue, reconcile, log, metrics } = options;
  for (;;) {
    const key = await queue.get();
    if (key === undefined) return;
    const started = performance.now();
    try {
      const result = await reconcile(key);
      queue.forget(key);
      if (result?.requeueAfterMs !== undefined) queue.addAfter(key, result.requeueAfterMs);
      metrics?.observe(name, "success", (performance.now() - started) / 1000);
    } catch (error) {
      if (error instanceof TerminalError) {
        queue.forget(key);
        log.warn("not retrying", { key, reason: error.message });
        metrics?.observe(name, "terminal", (performance.now() - started) / 1000);
      } else {
        log.warn("reconcile failed; retrying with backoff", { key, error, retries: queue.numRequeues(key) });
        queue.addRateLimited(key);
        metrics?.observe(name, "error", (performance.now() - started) / 1000);
      }
    } finally {
      queue.done(key);
    }
  }
}

/** Runs the workers until the queue shuts down. */
export async function runController(options: RunControllerOptions): Promise<void> {
  options.log.info("controller started", { controller: options.name, workers: options.workers });
  await Promise.all(Array.from({ length: options.workers }, () => worker(options)));
  options.log.info("controller stopped", { controller: options.name });
}
