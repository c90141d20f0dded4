import { describe, expect, it } from "vitest";
import { FakeClock } from "./fake-clock.ts";
import {
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  TokenBucketRateLimiter,
  defaultControllerRateLimiter,
} from "./rate-limiter.ts";

function delays(limiter: RateLimiter, keys: string[]): number[] {
  return keys.map((key) => limiter.when(key));
}

describe("ExponentialBackoffRateLimiter", () => {
  it.each([
    { baseMs: 5, maxMs: 1_000_000, expected: [5, 10, 20, 40, 80] },
    { baseMs: 5, maxMs: 30, expected: [5, 10, 20, 30, 30] },
    { baseMs: 1000, maxMs: 1000, expected: [1000, 1000, 1000, 1000, 1000] },
  ])("doubles from $baseMs ms per failure up to $maxMs ms", ({ baseMs, maxMs, expected }) => {
    const limiter = new ExponentialBackoffRateLimiter(baseMs, maxMs);
    expect(delays(limiter, ["a", "a", "a", "a", "a"])).toEqual(expected);
    expect(limiter.retries("a")).toBe(5);
  });

  it("stays at the cap however many failures there were", () => {
    const limiter = new ExponentialBackoffRateLimiter(5, 1_000_000);
    for (let i = 0; i < 2000; i++) limiter.when("a");
    expect(limiter.when("a")).toBe(1_000_000);
  });

  it("counts each key on its own and starts over once forgotten", () => {
    const limiter = new ExponentialBackoffRateLimiter(5, 1000);
    expect(delays(limiter, ["a", "a", "b", "a"])).toEqual([5, 10, 5, 20]);
    limiter.forget("a");
    expect(limiter.retries("a")).toBe(0);
    expect(limiter.retries("b")).toBe(1);
    expect(limiter.when("a")).toBe(5);
  });
});

describe("TokenBucketRateLimiter", () => {
  it("lets a burst through, then spaces calls at its rate, whatever the key", () => {
    const limiter: RateLimiter = new TokenBucketRateLimiter(10, 3, new FakeClock());
    expect(delays(limiter, ["a", "b", "c", "d", "a", "e"])).toEqual([0, 0, 0, 100, 200, 300]);
    expect(limiter.retries("a")).toBe(0);
  });

  it("refills over time, up to the burst", () => {
    const clock = new FakeClock();
    const limiter: RateLimiter = new TokenBucketRateLimiter(10, 3, clock);
    delays(limiter, ["a", "a", "a", "a", "a"]);
    clock.advance(10_000);
    expect(delays(limiter, ["a", "a", "a", "a"])).toEqual([0, 0, 0, 100]);
  });

  it("gives back reserved time as the clock moves", () => {
    const clock = new FakeClock();
    const limiter: RateLimiter = new TokenBucketRateLimiter(10, 1, clock);
    expect(delays(limiter, ["a", "a", "a"])).toEqual([0, 100, 200]);
    clock.advance(150);
    expect(limiter.when("a")).toBe(150);
  });
});

describe("MaxOfRateLimiter", () => {
  it("takes the longest delay and the most retries, and forgets in each limiter", () => {
    const fast = new ExponentialBackoffRateLimiter(1, 1000);
    const slow = new ExponentialBackoffRateLimiter(10, 15);
    const limiter = new MaxOfRateLimiter(fast, slow);
    expect(delays(limiter, ["a", "a", "a", "a", "a", "a"])).toEqual([10, 15, 15, 15, 16, 32]);
    expect(limiter.retries("a")).toBe(6);
    limiter.forget("a");
    expect([fast.retries("a"), slow.retries("a")]).toEqual([0, 0]);
  });

  it("is zero without limiters", () => {
    expect(new MaxOfRateLimiter().when("a")).toBe(0);
  });
});

describe("defaultControllerRateLimiter", () => {
  it("backs off per key from 5 ms, and holds all keys to 10 per second after a burst of 100", () => {
    const limiter = defaultControllerRateLimiter(new FakeClock());
    expect(delays(limiter, ["a", "a", "a"])).toEqual([5, 10, 20]);
    const others = Array.from({ length: 97 }, (_, i) => `key-${i}`);
    expect(new Set(delays(limiter, others))).toEqual(new Set([5]));
    expect(delays(limiter, ["x", "y"])).toEqual([100, 200]);
  });
});
