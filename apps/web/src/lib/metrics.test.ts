import { describe, expect, it } from "vitest";
import { formatBytes, formatCores, formatRate } from "./metrics";

describe("formatBytes", () => {
  it("reads in binary units with three significant figures", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1536)).toBe("1.50 KiB");
    expect(formatBytes(128 * 1024 * 1024)).toBe("128 MiB");
    expect(formatRate(2048)).toBe("2.00 KiB/s");
    expect(formatRate(0.5)).toBe("0.5 B/s");
  });
});

describe("formatCores", () => {
  it("keeps small figures apart", () => {
    expect(formatCores(0)).toBe("0 cores");
    expect(formatCores(0.004)).toBe("0.004 cores");
    expect(formatCores(0.006)).not.toBe(formatCores(0.004));
    expect(formatCores(1.5)).toBe("1.50 cores");
  });
});
