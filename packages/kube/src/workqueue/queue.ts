import { type Clock, realClock } from "./clock.ts";
import { Fifo } from "./fifo.ts";
import type { WorkQueueMetrics } from "./metrics.ts";
import { type RateLimiter, defaultControllerRateLimiter } from "./rate-limiter.ts";
import { WaitingSet } from "./waiting-set.ts";

// A controller's work queue with client-go's semantics: a key is queued at
// most once however often it is added, and it is never handed to two workers
// at once; a key added while a worker holds it is queued again when the worker
// calls done(). Keys can wait before being queued, for a time or for their
// rate limiter.

export interface WorkQueueOptions {
  /** Names the queue in metrics. */
  name: string;
  rateLimiter?: RateLimiter;
  clock?: Clock;
  metrics?: WorkQueueMetrics;
}

export class WorkQueue {
  readonly name: string;
  readonly #rateLimiter: RateLimiter;
  readonly #clock: Clock;
  readonly #metrics: WorkQueueMetrics | undefined;

  /** Keys ready for a worker, in the order they became ready. */
  readonly #ready = new Fifo<string>();
  /** Keys that need processing, ready or held by a worker, with when they were added. */
  readonly #dirty = new Map<string, number>();
  /** Keys held by workers, with when each was handed out; oldest first. */
  readonly #processing = new Map<string, number>();
  readonly #waiting = new WaitingSet();
  #timer: { at: number; handle: { cancel(): void } } | undefined;
  #getters: ((key: string | undefined) => void)[] = [];
  #drainers: (() => void)[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.#clock = options.clock ?? realClock;
    this.#rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter(this.#clock);
    this.#metrics = options.metrics;
    this.#metrics?.register(this.name, () => {
      const oldest = this.#processing.values().next();
      return oldest.done ? 0 : this.#clock.now() - oldest.value;
    });
  }

  /** Marks the key as needing processing; ignored once shutting down. */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.set(key, this.#clock.now());
    this.#metrics?.added(this.name);
    // done() queues it again, so that no second worker takes it meanwhile.
    if (this.#processing.has(key)) return;
    this.#enqueue(key);
  }

  /** Adds the key after ms; when it already waits, the earlier of the two times holds. */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    this.#waiting.add(key, this.#clock.now() + ms);
    this.#schedule();
  }

  /** Adds the key after the delay its rate limiter asks for, counting a retry. */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.#metrics?.retried(this.name);
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  /** Resets the key's backoff, e.g. after it was processed successfully. */
  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#rateLimiter.retries(key);
  }

  /**
   * The next key to process, waiting for one if none is ready; undefined once
   * the queue is shut down and empty. The caller owns the key until done(key).
   */
  get(): Promise<string | undefined> {
    const key = this.#ready.shift();
    if (key !== undefined) return Promise.resolve(this.#handOut(key));
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.#getters.push(resolve);
    });
  }

  /** Releases a key taken with get(); queues it again if it was added meanwhile. */
  done(key: string): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics?.done(this.name, this.#clock.now() - startedAt);
    if (this.#dirty.has(key)) this.#enqueue(key);
    if (this.#processing.size === 0) this.#releaseDrainers();
  }

  /** How many keys are ready for a worker. */
  len(): number {
    return this.#ready.length;
  }

  /**
   * Stops accepting keys and drops those waiting for a time. Keys already
   * ready are still handed out; waiting get() calls return undefined.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    this.#timer?.handle.cancel();
    this.#timer = undefined;
    this.#waiting.clear();
    // A get() only waits while nothing is ready, so these have nothing to take.
    for (const resolve of this.#getters.splice(0)) resolve(undefined);
  }

  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Shuts down, then resolves once every key handed out has been released with done(). */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#drainers.push(resolve);
    });
  }

  #enqueue(key: string): void {
    const getter = this.#getters.shift();
    if (getter === undefined) this.#ready.push(key);
    else getter(this.#handOut(key));
  }

  #handOut(key: string): string {
    const now = this.#clock.now();
    const addedAt = this.#dirty.get(key) ?? now;
    this.#dirty.delete(key);
    this.#processing.set(key, now);
    this.#metrics?.got(this.name, now - addedAt);
    return key;
  }

  #releaseDrainers(): void {
    for (const resolve of this.#drainers.splice(0)) resolve();
  }

  /** Keeps one timer, set for the earliest waiting key. */
  #schedule(): void {
    const next = this.#waiting.nextReadyAt();
    if (next === undefined || (this.#timer !== undefined && this.#timer.at <= next)) return;
    this.#timer?.handle.cancel();
    const fire = () => {
      this.#timer = undefined;
      for (const key of this.#waiting.takeReady(this.#clock.now())) this.add(key);
      this.#schedule();
    };
    this.#timer = { at: next, handle: this.#clock.setTimeout(fire, Math.max(0, Math.ceil(next - this.#clock.now()))) };
  }
}
