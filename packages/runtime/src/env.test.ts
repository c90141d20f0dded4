import { z } from "zod";
import { describe, expect, it } from "vitest";
import { baseEnv, metricsAuthorizationEnv, parseEnv } from "./env.ts";

const schema = z.object(baseEnv(9100));

describe("parseEnv", () => {
  it("applies defaults", () => {
    expect(parseEnv(schema, {})).toEqual({ OPS_PORT: 9100, LOG_LEVEL: "info" });
  });

  it("coerces numbers", () => {
    expect(parseEnv(schema, { OPS_PORT: "8080" }).OPS_PORT).toBe(8080);
  });

  it("names every bad variable", () => {
    expect(() => parseEnv(schema, { OPS_PORT: "x", LOG_LEVEL: "loud" })).toThrow(
      /^invalid environment: OPS_PORT: .*; LOG_LEVEL: /,
    );
  });

  it(
    "keeps /metrics to allowed callers unless METRICS_REQUIRE_AUTHORIZATION is false, " +
      "and names the chart's value for anything else",
    () => {
      const metrics = z.object(metricsAuthorizationEnv);
      expect(parseEnv(metrics, {})).toEqual({ METRICS_REQUIRE_AUTHORIZATION: true });
      expect(parseEnv(metrics, { METRICS_REQUIRE_AUTHORIZATION: "false" })).toEqual({
        METRICS_REQUIRE_AUTHORIZATION: false,
      });
      expect(() => parseEnv(metrics, { METRICS_REQUIRE_AUTHORIZATION: "no" })).toThrow(
        'invalid environment: METRICS_REQUIRE_AUTHORIZATION: must be "true" or "false" ' +
          "(the chart's metrics.requireAuthorization)",
      );
    },
  );
});
