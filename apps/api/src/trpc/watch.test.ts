import { describe, expect, it } from "vitest";
import { WatchQueue } from "./watch.ts";

// The queue's bounds alone: what it holds, and what it does past them.

describe("a watch stream's queue", () => {
  it("holds events in order up to its count, then drops them all and takes no more", () => {
    const queue = new WatchQueue<number>({ events: 3, bytes: 1_000 }, () => 1);
    expect([queue.push(1), queue.push(2), queue.push(3)]).toEqual([true, true, true]);
    expect(queue.shift()).toBe(1);
    expect(queue.push(4)).toBe(true);
    expect(queue.overflowed).toBe(false);
    expect(queue.push(5)).toBe(false);
    expect(queue.overflowed).toBe(true);
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
    expect(queue.push(6)).toBe(false);
  });

  it("counts the bytes of what it holds, freed as events are sent", () => {
    const queue = new WatchQueue<string>({ events: 100, bytes: 10 }, (event) => event.length);
    expect(queue.push("abcd")).toBe(true);
    expect(queue.push("efgh")).toBe(true);
    expect(queue.shift()).toBe("abcd");
    expect(queue.push("ijklmn")).toBe(true);
    expect(queue.push("o")).toBe(false);
    expect(queue.overflowed).toBe(true);
  });

  it("measures an event by its JSON unless told otherwise", () => {
    const queue = new WatchQueue<{ type: string; object: { data: string } }>({ events: 100, bytes: 64 });
    expect(queue.push({ type: "ADDED", object: { data: "x".repeat(20) } })).toBe(true);
    expect(queue.push({ type: "ADDED", object: { data: "x".repeat(20) } })).toBe(false);
  });
});
