import { describe, expect, it } from "vitest";
import { Fifo } from "./fifo.ts";

describe("Fifo", () => {
  it("returns items in the order they were pushed, across compactions", () => {
    const fifo = new Fifo<number>();
    const out: number[] = [];
    for (let i = 0; i < 10; i++) {
      fifo.push(2 * i);
      fifo.push(2 * i + 1);
      const item = fifo.shift();
      if (item !== undefined) out.push(item);
    }
    expect(fifo.length).toBe(10);
    for (let item = fifo.shift(); item !== undefined; item = fifo.shift()) out.push(item);
    expect(out).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(fifo.length).toBe(0);
  });
});
