import { stat } from "node:fs/promises";
import { limits } from "./limits.ts";

// libuv runs every file operation on a pool of four threads. An open or read
// that never returns (a FIFO, a hung mount) holds one for good, and four of
// them stop every file operation of the process, while its event loop, and so
// /healthz, still answer. The canary is one stat of "/" at a time: while one
// is out longer than the bound, the pool is taken for stuck and the handler
// not ready. It never queues a second stat behind a stuck one.

/** How long a stat of "/" may take before the threadpool is taken for stuck: limits.threadpoolCanaryMs. */
export const THREADPOOL_CANARY_TIMEOUT_MS = limits.threadpoolCanaryMs;

/** A readiness check (ReadinessCheck): why the threadpool is stuck, or undefined when a stat completes in time. */
export function threadpoolCheck(timeoutMs: number = THREADPOOL_CANARY_TIMEOUT_MS): () => Promise<string | undefined> {
  let outstanding: { since: number; done: Promise<void> } | undefined;
  return async () => {
    if (!outstanding) {
      const since = Date.now();
      const done = stat("/")
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => {
          outstanding = undefined;
        });
      outstanding = { since, done };
    }
    const { since, done } = outstanding;
    const left = Math.max(0, since + timeoutMs - Date.now());
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => {
        resolve("late");
      }, left);
    });
    const result = await Promise.race([done, late]).finally(() => {
      clearTimeout(timer);
    });
    return result === "late"
      ? "a file operation has not completed " +
          `in ${String(Math.round((Date.now() - since) / 1000))} s: libuv's threadpool is ` +
          "stuck"
      : undefined;
  };
}
