import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { createLogger } from "@kubevirt-ts/runtime";
import { describe, expect, it } from "vitest";
import { componentMetricsAccess, metricsReaders } from "./metrics-readers.ts";
import type { KubeClient } from "./rest.ts";

/**
 * An API server stand-in that accepts every token as the user of that name, lets "prometheus" in, and counts the token
 * reviews.
 */
function reviewer(options: { hold?: Promise<undefined> } = {}) {
  const reviewed: string[] = [];
  const client = {
    async create(type: { plural: string }, _namespace: unknown, body: { spec: { token?: string; user?: string } }) {
      await options.hold;
      if (type.plural === "tokenreviews") {
        reviewed.push(body.spec.token ?? "");
        return { status: { authenticated: true, user: { username: body.spec.token } } };
      }
      return { status: { allowed: body.spec.user === "prometheus" } };
    },
  } as unknown as KubeClient;
  return { reviewed, client: () => Promise.resolve(client) };
}

describe("metricsReaders", () => {
  it("reviews a token again once its decision is older than the period", async () => {
    const api = reviewer();
    let now = 0;
    const access = metricsReaders(api.client, { ttlMs: 60_000, now: () => now });
    expect(await access("Bearer prometheus")).toBeUndefined();
    now = 59_999;
    expect(await access("Bearer prometheus")).toBeUndefined();
    expect((await access("Bearer tenant"))?.status).toBe(403);
    now = 60_000;
    expect(await access("Bearer prometheus")).toBeUndefined();
    expect(api.reviewed).toEqual(["prometheus", "tenant", "prometheus"]);
  });

  it("keeps at most maxEntries decisions, dropping the oldest", async () => {
    const api = reviewer();
    const access = metricsReaders(api.client, { maxEntries: 2 });
    for (const token of ["a", "b", "c", "b", "a"]) await access(`Bearer ${token}`);
    // "a" was dropped when "c" came; "b" was still kept.
    expect(api.reviewed).toEqual(["a", "b", "c", "a"]);
  });

  it(
    "refuses with 429 a caller beyond maxReviews under way, and reviews a " + "token asked for at once only once",
    async () => {
      const gate = Promise.withResolvers<undefined>();
      const api = reviewer({ hold: gate.promise.then(() => undefined) });
      const access = metricsReaders(api.client, { maxReviews: 2 });
      const first = [access("Bearer a"), access("Bearer a"), access("Bearer b")];
      expect(await access("Bearer c")).toEqual({ status: 429, reason: expect.stringMatching(/too many/) as string });
      gate.resolve(undefined);
      expect((await Promise.all(first)).map((refusal) => refusal?.status)).toEqual([403, 403, 403]);
      expect(api.reviewed).toEqual(["a", "b"]);
    },
  );

  describe("componentMetricsAccess", () => {
    // A kubeconfig naming no cluster: any client made of it fails, so an answer given shows no client was needed.
    const nowhere = new KubeConfig();
    const context = () => {
      const lines: string[] = [];
      const log = createLogger({ component: "test", write: (line) => lines.push(line) });
      return { lines, ctx: { log, registry: new Registry(), signal: new AbortController().signal } };
    };

    it(
      "when required, refuses a caller without a token before it asks the API server, " +
        "and says it cannot check one with a token",
      async () => {
        const { lines, ctx } = context();
        const access = componentMetricsAccess(nowhere, true)(ctx);
        expect((await access(undefined))?.status).toBe(401);
        expect(await access("Bearer prometheus")).toEqual({
          status: 503,
          reason: expect.stringMatching(/cannot check the caller.*no current cluster/) as string,
        });
        expect(lines).toEqual([]);
      },
    );

    it("when not required, lets anyone in and warns once that /metrics lists every tenant's VMs", async () => {
      const { lines, ctx } = context();
      const access = componentMetricsAccess(nowhere, false)(ctx);
      expect(await access(undefined)).toBeUndefined();
      expect(await access("Bearer anything")).toBeUndefined();
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({
        level: "warn",
        msg: expect.stringMatching(/METRICS_REQUIRE_AUTHORIZATION=false.*every tenant's VMs/) as string,
      });
    });
  });
});
