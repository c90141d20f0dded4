import { describe, expect, it } from "vitest";
import { WaitingSet } from "./waiting-set.ts";

describe("WaitingSet", () => {
  it.each([
    {
      name: "orders keys by time",
      adds: [
        ["a", 30],
        ["b", 10],
        ["c", 20],
      ],
      ready: ["b", "c", "a"],
    },
    {
      name: "moves a key earlier",
      adds: [
        ["a", 30],
        ["b", 20],
        ["a", 10],
      ],
      ready: ["a", "b"],
    },
    {
      name: "keeps the earlier time",
      adds: [
        ["a", 10],
        ["b", 20],
        ["a", 30],
      ],
      ready: ["a", "b"],
    },
  ] as { name: string; adds: [string, number][]; ready: string[] }[])("$name", ({ adds, ready }) => {
    const waiting = new WaitingSet();
    for (const [key, at] of adds) waiting.add(key, at);
    expect(waiting.size).toBe(ready.length);
    expect(waiting.takeReady(100)).toEqual(ready);
    expect(waiting.nextReadyAt()).toBeUndefined();
  });

  it("takes only the keys whose time has come", () => {
    const waiting = new WaitingSet();
    for (const [key, at] of [
      ["a", 5],
      ["b", 15],
      ["c", 10],
      ["d", 25],
    ] as const)
      waiting.add(key, at);
    waiting.add("d", 1);
    expect(waiting.takeReady(10)).toEqual(["d", "a", "c"]);
    expect(waiting.nextReadyAt()).toBe(15);
    expect(waiting.takeReady(14)).toEqual([]);
    expect(waiting.takeReady(15)).toEqual(["b"]);
  });

  it("waits a taken key again at a new time", () => {
    const waiting = new WaitingSet();
    waiting.add("a", 10);
    waiting.add("a", 5);
    expect(waiting.takeReady(5)).toEqual(["a"]);
    waiting.add("a", 10);
    expect(waiting.takeReady(10)).toEqual(["a"]);
    expect(waiting.size).toBe(0);
  });

  it("orders many keys by time", () => {
    const waiting = new WaitingSet();
    const times = Array.from({ length: 200 }, (_, i) => (i * 7919) % 200);
    times.forEach((at, i) => {
      waiting.add(`k${i}`, at);
    });
    const ready = waiting.takeReady(1000).map((key) => times[Number(key.slice(1))]);
    expect(ready).toEqual([...times].sort((a, b) => a - b));
  });
});
