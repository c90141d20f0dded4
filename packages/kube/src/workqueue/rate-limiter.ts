import { type Clock, realClock } from "./clock.ts";

// How long a key must wait before it is retried, after client-go's
// workqueue rate limiters.

export interface RateLimiter {
  /** The delay in ms before the key may be processed again; counts one more retry. */
  when(key: string): number;
  /** Stops tracking the key, e.g. once it was processed successfully. */
  forget(key: string): void;
  /** How many times the key has been retried since it was last forgotten. */
  retries(key: string): number;
}

/** Per key: baseMs after the first failure, doubling with each further one, up to maxMs. */
export class ExponentialBackoffRateLimiter implements RateLimiter {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #failures = new Map<string, number>();

  constructor(baseMs = 5, maxMs = 1_000_000) {
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    return Math.min(this.#baseMs * 2 ** failures, this.#maxMs);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  retries(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

/**
 * Across all keys: a bucket of `burst` tokens refilled at `qps` per second.
 * Each call takes a token, borrowing from the future when the bucket is
 * empty, and returns how long until that token exists.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #updatedAt: number;

  constructor(qps = 10, burst = 100, clock: Clock = realClock) {
    this.#qps = qps;
    this.#burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#updatedAt = clock.now();
  }

  when(): number {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#updatedAt) * this.#qps) / 1000);
    this.#updatedAt = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens * 1000) / this.#qps);
  }

  forget(): void {
    // The bucket is shared by all keys: there is nothing per key to forget.
  }

  retries(): number {
    return 0;
  }
}

/** The longest delay of several limiters, e.g. per-key backoff under a global limit. */
export class MaxOfRateLimiter implements RateLimiter {
  readonly #limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.#limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must see every call, so no short-circuiting.
    return this.#limiters.reduce((longest, limiter) => Math.max(longest, limiter.when(key)), 0);
  }

  forget(key: string): void {
    for (const limiter of this.#limiters) limiter.forget(key);
  }

  retries(key: string): number {
    return this.#limiters.reduce((most, limiter) => Math.max(most, limiter.retries(key)), 0);
  }
}

/** client-go's default: 5 ms doubling per key up to 1000 s, under 10 qps with a burst of 100. */
export function defaultControllerRateLimiter(clock: Clock = realClock): RateLimiter {
  return new MaxOfRateLimiter(
    new ExponentialBackoffRateLimiter(5, 1_000_000),
    new TokenBucketRateLimiter(10, 100, clock),
  );
}
