import { describe, expect, it } from "vitest";
import { reviewCache } from "./token-reviews.ts";

// The cache of token decisions: tokens the API server refused are kept apart
// from those it accepted, so a flood of made-up tokens never pushes a
// signed-in user's decision out (which would send that user back to the
// few reviews under way, busy with the flood).

describe("reviewCache", () => {
  it("keeps accepted tokens' decisions while made-up tokens push out only each other", async () => {
    const reviews: string[] = [];
    const decide = reviewCache(
      (token) => {
        reviews.push(token);
        return Promise.resolve(token.startsWith("real") ? { user: token } : undefined);
      },
      { maxEntries: 4, maxReviews: 100 },
      (decision) => decision !== undefined,
    );
    expect(await decide("real-user")).toEqual({ user: "real-user" });
    for (let i = 0; i < 50; i++) expect(await decide(`made-up-${String(i)}`)).toBeUndefined();
    const before = reviews.length;
    expect(await decide("real-user")).toEqual({ user: "real-user" });
    expect(reviews.length, "the signed-in user's decision was still kept: no new review").toBe(before);
    // The refused ones' own bound holds: the oldest made-up token is reviewed again.
    await decide("made-up-0");
    expect(reviews.length).toBe(before + 1);
  });

  it("without a rule, every decision shares one bound, the oldest going first", async () => {
    const reviews: string[] = [];
    const decide = reviewCache(
      (token) => {
        reviews.push(token);
        return Promise.resolve(token);
      },
      { maxEntries: 2, maxReviews: 100 },
    );
    for (const token of ["a", "b", "c"]) await decide(token);
    await decide("a");
    expect(reviews).toEqual(["a", "b", "c", "a"]);
  });
});
