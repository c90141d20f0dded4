import { setImmediate as macrotask } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { FakeClock } from "./fake-clock.ts";
import { WorkQueue } from "./queue.ts";
import { ExponentialBackoffRateLimiter } from "./rate-limiter.ts";

function newQueue(clock = new FakeClock()) {
  return new WorkQueue({ name: "test", clock, rateLimiter: new ExponentialBackoffRateLimiter(5, 1000) });
}

/** A promise's outcome so far, to see that a get() is still waiting. */
function observe<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

async function drainReady(queue: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (queue.len() > 0) {
    const key = await queue.get();
    if (key === undefined) break;
    keys.push(key);
    queue.done(key);
  }
  return keys;
}

describe("WorkQueue", () => {
  it.each([
    { adds: ["a", "b", "a"], expected: ["a", "b"] },
    { adds: ["a", "a", "a"], expected: ["a"] },
    { adds: ["c", "b", "a", "b", "c"], expected: ["c", "b", "a"] },
  ])("queues each key once, in the order first added: $adds", async ({ adds, expected }) => {
    const queue = newQueue();
    for (const key of adds) queue.add(key);
    expect(queue.len()).toBe(expected.length);
    expect(await drainReady(queue)).toEqual(expected);
  });

  it(
    "never hands a key to a second worker before done, and queues it again " + "then if it was added meanwhile",
    async () => {
      const queue = newQueue();
      queue.add("a");
      expect(await queue.get()).toBe("a");

      queue.add("a");
      queue.add("a");
      expect(queue.len()).toBe(0);
      const second = observe(queue.get());
      await macrotask();
      expect(second.settled).toBe(false);

      queue.done("a");
      await macrotask();
      expect(second).toEqual({ settled: true, value: "a" });
      queue.done("a");
      expect(queue.len()).toBe(0);
    },
  );

  it("hands other keys out while one is being processed", async () => {
    const queue = newQueue();
    queue.add("a");
    expect(await queue.get()).toBe("a");
    queue.add("a");
    queue.add("b");
    expect(await queue.get()).toBe("b");
    queue.done("a");
    expect(await queue.get()).toBe("a");
  });

  it("does not queue a key again on done when nobody added it", async () => {
    const queue = newQueue();
    queue.add("a");
    queue.done(String(await queue.get()));
    expect(queue.len()).toBe(0);
  });

  it("ignores done for a key it did not hand out", () => {
    const queue = newQueue();
    queue.add("a");
    queue.done("a");
    queue.done("b");
    expect(queue.len()).toBe(1);
  });

  it("wakes a waiting get() when a key is added, first caller first", async () => {
    const queue = newQueue();
    const first = queue.get();
    const second = queue.get();
    queue.add("a");
    queue.add("b");
    expect([await first, await second]).toEqual(["a", "b"]);
  });

  it.each([
    {
      name: "orders keys by their time",
      delays: [
        ["a", 100],
        ["b", 50],
      ],
      expected: [
        [50, ["b"]],
        [100, ["a"]],
      ],
    },
    {
      name: "lets a later, shorter delay win",
      delays: [
        ["a", 100],
        ["a", 30],
      ],
      expected: [
        [30, ["a"]],
        [100, []],
      ],
    },
    {
      name: "keeps the earliest time over a later, longer delay",
      delays: [
        ["a", 30],
        ["a", 200],
      ],
      expected: [
        [30, ["a"]],
        [200, []],
      ],
    },
  ] as { name: string; delays: [string, number][]; expected: [number, string[]][] }[])(
    "addAfter $name",
    async ({ delays, expected }) => {
      const clock = new FakeClock();
      const queue = newQueue(clock);
      for (const [key, ms] of delays) queue.addAfter(key, ms);
      for (const [at, keys] of expected) {
        clock.advance(at - clock.now() - 1);
        expect(queue.len(), `just before ${at} ms`).toBe(0);
        clock.advance(1);
        expect(await drainReady(queue), `at ${at} ms`).toEqual(keys);
      }
      expect(clock.pendingTimers()).toBe(0);
    },
  );

  it.each([0, -5])("addAfter adds at once with a delay of %i ms", (ms) => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter("a", ms);
    expect(queue.len()).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("leaves a key that is already queued queued once when its delay passes", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter("a", 10);
    queue.add("a");
    clock.advance(10);
    expect(await drainReady(queue)).toEqual(["a"]);
  });

  it("retries with the rate limiter's backoff until the key is forgotten", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    const readyAfter: number[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const start = clock.now();
      queue.addRateLimited("a");
      while (queue.len() === 0) clock.advance(1);
      readyAfter.push(clock.now() - start);
      queue.done(String(await queue.get()));
    }
    expect(readyAfter).toEqual([5, 10, 20]);
    expect(queue.numRequeues("a")).toBe(3);
    queue.forget("a");
    expect(queue.numRequeues("a")).toBe(0);
  });

  it("releases waiting get() calls with undefined on shutDown, and then ignores adds", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    const waiting = [queue.get(), queue.get()];
    queue.addAfter("later", 10);
    queue.shutDown();
    expect(await Promise.all(waiting)).toEqual([undefined, undefined]);
    expect(queue.shuttingDown()).toBe(true);
    expect(clock.pendingTimers()).toBe(0);

    queue.add("a");
    queue.addAfter("b", 1);
    queue.addRateLimited("c");
    clock.advance(1000);
    expect(queue.len()).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it("still hands out the keys that were ready when it shut down", async () => {
    const queue = newQueue();
    queue.add("a");
    queue.shutDown();
    expect(await queue.get()).toBe("a");
    expect(await queue.get()).toBeUndefined();
  });

  it("shutDownWithDrain resolves once every key being processed is done", async () => {
    const queue = newQueue();
    queue.add("a");
    queue.add("b");
    const [a, b] = [await queue.get(), await queue.get()];
    const drained = observe(queue.shutDownWithDrain());
    queue.add("c");
    expect(queue.len()).toBe(0);

    queue.done(String(a));
    await macrotask();
    expect(drained.settled).toBe(false);
    queue.done(String(b));
    await macrotask();
    expect(drained.settled).toBe(true);
  });

  it("shutDownWithDrain resolves at once when nothing is being processed", async () => {
    await expect(newQueue().shutDownWithDrain()).resolves.toBeUndefined();
  });
});
