import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MAX_WATCHERS, Revision } from "./revision.ts";

describe("the launcher's revision and the watches waiting on it", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers at once a watch from a revision that is not the current one", async () => {
    const revision = new Revision();
    expect(await revision.next(0, 60_000)).toBe(1);
    revision.bump();
    expect(await revision.next(1, 60_000)).toBe(2);
    // A handler's revision from a launcher before this one, past this one's count.
    expect(await revision.next(7, 60_000)).toBe(2);
    expect(revision.waiting).toBe(0);
  });

  it("answers a watch from the current revision at the next change, and not before", async () => {
    const revision = new Revision();
    let answered: number | undefined;
    void revision.next(1, 60_000).then((r) => (answered = r));
    await vi.advanceTimersByTimeAsync(59_000);
    expect(answered).toBeUndefined();
    revision.bump();
    await vi.advanceTimersByTimeAsync(0);
    expect(answered).toBe(2);
    expect(revision.waiting).toBe(0);
  });

  it("answers with the same revision once the watch's time is up", async () => {
    const revision = new Revision();
    let answered: number | undefined;
    void revision.next(1, 30_000).then((r) => (answered = r));
    await vi.advanceTimersByTimeAsync(29_999);
    expect(answered).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toBe(1);
    // A change after that finds nobody waiting.
    revision.bump();
    expect(revision.waiting).toBe(0);
  });

  it("holds at most MAX_WATCHERS watches: the oldest is answered when one more comes", async () => {
    const revision = new Revision();
    const answered: number[] = [];
    for (let i = 0; i <= MAX_WATCHERS; i++) void revision.next(1, 60_000).then(() => answered.push(i));
    await vi.advanceTimersByTimeAsync(0);
    expect(answered).toEqual([0]);
    expect(revision.waiting).toBe(MAX_WATCHERS);
    revision.close();
    await vi.advanceTimersByTimeAsync(0);
    expect(answered).toHaveLength(MAX_WATCHERS + 1);
    expect(revision.waiting).toBe(0);
  });
});
