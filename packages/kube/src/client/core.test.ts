import { describe, expect, it } from "vitest";
import { type EndpointSlice, slicesRouteToPod } from "./core.ts";

describe("slicesRouteToPod", () => {
  const pod = { metadata: { name: "p", uid: "u-1" } };
  const slice = (uid: string, ready: boolean): EndpointSlice => ({
    metadata: { name: "s" },
    endpoints: [{ addresses: ["198.18.0.9"], conditions: { ready }, targetRef: { kind: "Pod", uid } }],
  });

  it("routes once a slice lists the pod's endpoint as ready", () => {
    expect(slicesRouteToPod([slice("u-1", true)], pod)).toBe(true);
  });

  it("does not while the endpoint is not ready, is an earlier pod's of the name, or no slice exists", () => {
    expect(slicesRouteToPod([slice("u-1", false)], pod)).toBe(false);
    expect(slicesRouteToPod([slice("u-0", true)], pod)).toBe(false);
    expect(slicesRouteToPod([], pod)).toBe(false);
  });
});
