import { describe, expect, it } from "vitest";
import { isQuantity, parseQuantity } from "./quantity.ts";

describe("parseQuantity", () => {
  it.each([
    ["128Mi", 128 * 2 ** 20],
    ["1Gi", 2 ** 30],
    ["1G", 1e9],
    ["500m", 0.5],
    ["2", 2],
    [2, 2],
    ["1.5Gi", 1.5 * 2 ** 30],
    ["1e3", 1000],
    ["+4k", 4000],
    ["-1", -1],
  ] as const)("%s is %d", (input, expected) => {
    expect(parseQuantity(input)).toBe(expected);
  });

  it.each(["", "1 Gi", "Gi", "1GB", "abc", "1.2.3"])("refuses %j", (input) => {
    expect(isQuantity(input)).toBe(false);
    expect(parseQuantity(input)).toBeUndefined();
  });
});
