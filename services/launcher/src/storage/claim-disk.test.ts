import { describe, expect, it } from "vitest";
import { claimBytes, grownDiskSize, newDiskSize } from "./claim-disk.ts";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
const info = (requests?: string, capacity?: string) => ({ claimName: "data", ...(requests ? { requests: { storage: requests } } : {}), ...(capacity ? { capacity: { storage: capacity } } : {}) });

describe("claimBytes", () => {
  it("is the claim's request, unless its capacity is smaller or all that is known", () => {
    expect(claimBytes(info("2Gi", "5Gi"))).toBe(2 * GIB);
    expect(claimBytes(info("2Gi", "1Gi"))).toBe(GIB);
    expect(claimBytes(info(undefined, "3Gi"))).toBe(3 * GIB);
    expect(claimBytes(info())).toBeUndefined();
  });
});

describe("newDiskSize", () => {
  it("is the claim's size, aligned down to 1 MiB, when there is room", () => {
    expect(newDiskSize("data", info("1G"), 100 * GIB)).toEqual({ bytes: Math.floor(1e9 / MIB) * MIB, tolerated: false });
  });

  it("takes the room there is when it is at most 10 % short, and refuses more, saying what to do", () => {
    expect(newDiskSize("data", info("10Gi"), 9.5 * GIB)).toEqual({ bytes: Math.floor((9.5 * GIB - 131_072) / MIB) * MIB, tolerated: true });
    const refused = newDiskSize("data", info("10Gi"), 8 * GIB);
    expect(refused).toEqual({ error: expect.stringMatching(/^volume data: not enough space on the claim data for its disk: .* grow the claim$/) as unknown });
  });

  it("refuses a claim without a size, or smaller than 1 MiB", () => {
    expect(newDiskSize("data", info(), GIB)).toEqual({ error: expect.stringContaining("reports no storage request or capacity") as unknown });
    expect(newDiskSize("data", info("512Ki"), GIB)).toEqual({ error: expect.stringContaining("a disk needs at least 1 MiB") as unknown });
  });
});

describe("grownDiskSize", () => {
  it("leaves the file-system overhead free, within the file system", () => {
    expect(grownDiskSize(info("10Gi"), 100 * GIB)).toBe(Math.floor((0.945 * 10 * GIB) / MIB) * MIB);
    expect(grownDiskSize({ ...info("10Gi"), filesystemOverhead: "0" }, 4 * GIB)).toBe(4 * GIB);
  });
});
