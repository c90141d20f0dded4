import { describe, expect, it } from "vitest";
import { cloneState } from "./clones";

describe("a clone's state in words", () => {
  it.each([
    [{ phase: "", succeeded: false, message: undefined }, "Pending"],
    [
      { phase: "SnapshotInProgress", succeeded: false, message: "Taking snapshot s" },
      "Taking a snapshot: Taking snapshot s",
    ],
    [{ phase: "RestoreInProgress", succeeded: false, message: undefined }, "Restoring the snapshot"],
    [{ phase: "Succeeded", succeeded: true, message: "Ready" }, "Succeeded"],
    [{ phase: "Failed", succeeded: false, message: "the restore r failed" }, "Failed: the restore r failed"],
    [{ phase: "Unknown", succeeded: false, message: undefined }, "Unknown"],
  ] as const)("%o reads %s", (row, words) => {
    expect(cloneState(row)).toBe(words);
  });
});
