import { Counter, Gauge, Histogram, type Registry, exponentialBuckets } from "prom-client";

// The workqueue_* metrics of client-go, so that the same dashboards and
// alerts apply. One object serves every queue of a process; each series is
// labelled with the queue's name.

/** What a work queue reports; durations are in milliseconds. */
export interface WorkQueueMetrics {
  /** Starts the queue's series at zero and says how to read its oldest running key's age. */
  register(name: string, longestRunningMs: () => number): void;
  /** A key started waiting to be processed. */
  added(name: string): void;
  /** A key was handed to a worker after waiting this long. */
  got(name: string, queuedMs: number): void;
  /** A worker finished a key after working on it this long. */
  done(name: string, workedMs: number): void;
  /** A key was put back after a failure. */
  retried(name: string): void;
}

// Our clocks read milliseconds, so client-go's buckets from 10 ns would stay
// empty: these run from 1 ms to 10,000 s.
const DURATION_BUCKETS = exponentialBuckets(0.001, 10, 8);

export function createWorkQueueMetrics(registry: Registry): WorkQueueMetrics {
  const registers = [registry];
  const labelNames = ["name"] as const;
  const longestRunning = new Map<string, () => number>();

  const depth = new Gauge({ name: "workqueue_depth", help: "Current depth of the work queue.", labelNames, registers });
  const adds = new Counter({
    name: "workqueue_adds_total",
    help: "Total number of adds handled by the work queue.",
    labelNames,
    registers,
  });
  const queueDuration = new Histogram({
    name: "workqueue_queue_duration_seconds",
    help: "How long in seconds a key stays in the work queue before being requested.",
    labelNames,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const workDuration = new Histogram({
    name: "workqueue_work_duration_seconds",
    help: "How long in seconds processing a key from the work queue takes.",
    labelNames,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const retries = new Counter({
    name: "workqueue_retries_total",
    help: "Total number of retries handled by the work queue.",
    labelNames,
    registers,
  });
  new Gauge({
    name: "workqueue_longest_running_processor_seconds",
    help: "How many seconds the longest running processor of the work queue has been running.",
    labelNames,
    registers,
    collect() {
      for (const [name, read] of longestRunning) this.set({ name }, read() / 1000);
    },
  });

  return {
    register: (name, longestRunningMs) => {
      longestRunning.set(name, longestRunningMs);
      depth.set({ name }, 0);
      adds.inc({ name }, 0);
      retries.inc({ name }, 0);
      queueDuration.zero({ name });
      workDuration.zero({ name });
    },
    added: (name) => {
      adds.inc({ name });
      depth.inc({ name });
    },
    got: (name, queuedMs) => {
      depth.dec({ name });
      queueDuration.observe({ name }, queuedMs / 1000);
    },
    done: (name, workedMs) => {
      workDuration.observe({ name }, workedMs / 1000);
    },
    retried: (name) => {
      retries.inc({ name });
    },
  };
}
