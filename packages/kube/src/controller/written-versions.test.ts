import { describe, expect, it } from "vitest";
import { WrittenVersions } from "./written-versions.ts";

describe("WrittenVersions", () => {
  it("calls a cached copy stale while it is the version a write replaced, and not once the cache moved on", () => {
    const written = new WrittenVersions();
    expect(written.isStale("ns/a", "10")).toBe(false);
    written.wrote("ns/a", "10");
    expect(written.isStale("ns/a", "10")).toBe(true);
    expect(written.isStale("ns/b", "10")).toBe(false);
    expect(written.isStale("ns/a", "11")).toBe(false);
    // Once the cache has shown a newer version, the record is gone: an older copy is no longer recognised.
    expect(written.isStale("ns/a", "10")).toBe(false);
  });

  it("knows every version a reconcile's writes replaced: a patch, then a write on top of it", () => {
    const written = new WrittenVersions();
    written.wrote("ns/a", "10", "11");
    expect(written.isStale("ns/a", "10")).toBe(true);
    expect(written.isStale("ns/a", "11")).toBe(true);
    expect(written.isStale("ns/a", "12")).toBe(false);
  });

  it("forgets an object, and ignores a write of an object that had no version", () => {
    const written = new WrittenVersions();
    written.wrote("ns/a", "10");
    written.forget("ns/a");
    expect(written.isStale("ns/a", "10")).toBe(false);
    written.wrote("ns/a", undefined);
    expect(written.isStale("ns/a", undefined)).toBe(false);
  });
});
