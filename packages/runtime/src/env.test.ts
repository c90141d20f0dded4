import { z } from "zod";
import { describe, expect, it } from "vitest";
import { baseEnv, parseEnv } from "./env.ts";

const schema = z.object(baseEnv(9100));

describe("parseEnv", () => {
  it("applies defaults", () => {
    expect(parseEnv(schema, {})).toEqual({ OPS_PORT: 9100, LOG_LEVEL: "info" });
  });

  it("coerces numbers", () => {
    expect(parseEnv(schema, { OPS_PORT: "8080" }).OPS_PORT).toBe(8080);
  });

  it("names every bad variable", () => {
    expect(() => parseEnv(schema, { OPS_PORT: "x", LOG_LEVEL: "loud" })).toThrow(/^invalid environment: OPS_PORT: .*; LOG_LEVEL: /);
  });
});
