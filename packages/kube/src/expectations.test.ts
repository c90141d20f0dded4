import { describe, expect, it } from "vitest";
import { Expectations } from "./expectations.ts";
import { FakeClock } from "./workqueue/fake-clock.ts";

const KEY = "default/vmi";
type Step = (e: Expectations) => void;

describe("Expectations", () => {
  it.each<[string, Step[], boolean]>([
    ["a key without a record", [], true],
    [
      "creations not yet observed",
      [
        (e) => {
          e.expectCreations(KEY, 2);
        },
        (e) => {
          e.creationObserved(KEY);
        },
      ],
      false,
    ],
    [
      "every creation observed",
      [
        (e) => {
          e.expectCreations(KEY, 2);
        },
        (e) => {
          e.creationObserved(KEY);
        },
        (e) => {
          e.creationObserved(KEY);
        },
      ],
      true,
    ],
    [
      "a deletion not yet observed",
      [
        (e) => {
          e.expectDeletions(KEY, 1);
        },
      ],
      false,
    ],
    [
      "the deletion observed",
      [
        (e) => {
          e.expectDeletions(KEY, 1);
        },
        (e) => {
          e.deletionObserved(KEY);
        },
      ],
      true,
    ],
    [
      "nothing expected",
      [
        (e) => {
          e.expectCreations(KEY, 0);
        },
      ],
      true,
    ],
    [
      "more observed than expected",
      [
        (e) => {
          e.expectCreations(KEY, 1);
        },
        (e) => {
          e.lowerExpectations(KEY, 3, 0);
        },
      ],
      true,
    ],
    [
      "expectations raised",
      [
        (e) => {
          e.expectCreations(KEY, 1);
        },
        (e) => {
          e.creationObserved(KEY);
        },
        (e) => {
          e.raiseExpectations(KEY, 0, 1);
        },
      ],
      false,
    ],
    [
      "expectations lowered",
      [
        (e) => {
          e.expectCreations(KEY, 1);
        },
        (e) => {
          e.raiseExpectations(KEY, 1, 2);
        },
        (e) => {
          e.lowerExpectations(KEY, 2, 2);
        },
      ],
      true,
    ],
    [
      "expectations raised without a record",
      [
        (e) => {
          e.raiseExpectations(KEY, 1, 1);
        },
      ],
      true,
    ],
    [
      "creations expected again, replacing the old record",
      [
        (e) => {
          e.expectDeletions(KEY, 3);
        },
        (e) => {
          e.expectCreations(KEY, 1);
        },
        (e) => {
          e.creationObserved(KEY);
        },
      ],
      true,
    ],
    [
      "the record deleted",
      [
        (e) => {
          e.expectCreations(KEY, 1);
        },
        (e) => {
          e.deleteExpectations(KEY);
        },
      ],
      true,
    ],
    [
      "another key's creation observed",
      [
        (e) => {
          e.expectCreations(KEY, 1);
        },
        (e) => {
          e.creationObserved("default/other");
        },
      ],
      false,
    ],
  ])("with %s, satisfied is %s", (_, steps, satisfied) => {
    const expectations = new Expectations({ clock: new FakeClock() });
    for (const step of steps) step(expectations);
    expect(expectations.satisfied(KEY)).toBe(satisfied);
  });

  it.each([
    { ttlMs: undefined, elapsedMs: 5 * 60 * 1000, satisfied: false },
    { ttlMs: undefined, elapsedMs: 5 * 60 * 1000 + 1, satisfied: true },
    { ttlMs: 1000, elapsedMs: 1000, satisfied: false },
    { ttlMs: 1000, elapsedMs: 1001, satisfied: true },
  ])(
    "with a ttl of $ttlMs ms, $elapsedMs ms after expecting, satisfied is $satisfied",
    ({ ttlMs, elapsedMs, satisfied }) => {
      const clock = new FakeClock();
      const expectations = new Expectations(ttlMs === undefined ? { clock } : { ttlMs, clock });
      expectations.expectCreations(KEY, 1);
      clock.advance(elapsedMs);
      expect(expectations.satisfied(KEY)).toBe(satisfied);
    },
  );

  it("does not extend a record's life when expectations are raised", () => {
    const clock = new FakeClock();
    const expectations = new Expectations({ ttlMs: 1000, clock });
    expectations.expectCreations(KEY, 1);
    clock.advance(900);
    expectations.raiseExpectations(KEY, 1, 0);
    clock.advance(101);
    expect(expectations.satisfied(KEY)).toBe(true);
  });
});
