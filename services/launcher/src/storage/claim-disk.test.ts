import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { claimBytes, claimDisk, grownDiskSize, newDiskSize } from "./claim-disk.ts";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
const info = (requests?: string, capacity?: string) => ({
  claimName: "data",
  ...(requests ? { requests: { storage: requests } } : {}),
  ...(capacity ? { capacity: { storage: capacity } } : {}),
});

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
    expect(newDiskSize("data", info("1G"), 100 * GIB)).toEqual({
      bytes: Math.floor(1e9 / MIB) * MIB,
      tolerated: false,
    });
  });

  it("takes the room there is when it is at most 10 % short, and refuses more, saying what to do", () => {
    expect(newDiskSize("data", info("10Gi"), 9.5 * GIB)).toEqual({
      bytes: Math.floor((9.5 * GIB - 131_072) / MIB) * MIB,
      tolerated: true,
    });
    const refused = newDiskSize("data", info("10Gi"), 8 * GIB);
    expect(refused).toEqual({
      error: expect.stringMatching(
        /^volume data: not enough space on the claim data for its disk: .* grow the claim$/,
      ) as unknown,
    });
  });

  it("refuses a claim without a size, or smaller than 1 MiB", () => {
    expect(newDiskSize("data", info(), GIB)).toEqual({
      error: expect.stringContaining("reports no storage request or capacity") as unknown,
    });
    expect(newDiskSize("data", info("512Ki"), GIB)).toEqual({
      error: expect.stringContaining("a disk needs at least 1 MiB") as unknown,
    });
  });
});

describe("grownDiskSize", () => {
  it("leaves the file-system overhead free, within the file system", () => {
    expect(grownDiskSize(info("10Gi"), 100 * GIB)).toBe(Math.floor((0.945 * 10 * GIB) / MIB) * MIB);
    expect(grownDiskSize({ ...info("10Gi"), filesystemOverhead: "0" }, 4 * GIB)).toBe(4 * GIB);
  });

  it("takes KubeVirt's default overhead for a value that is no share", () => {
    expect(grownDiskSize({ ...info("10Gi"), filesystemOverhead: "-1" }, 100 * GIB)).toBe(
      grownDiskSize(info("10Gi"), 100 * GIB),
    );
    expect(grownDiskSize({ ...info("10Gi"), filesystemOverhead: "1.5" }, 100 * GIB)).toBe(
      grownDiskSize(info("10Gi"), 100 * GIB),
    );
  });
});

describe("claimDisk, on a real folder", () => {
  let root = "";
  const dirs = () => ({ disks: join(root, "disks"), devices: join(root, "devices") });
  const disk = () => join(root, "disks", "data", "disk.img");
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "claim-disk-"));
    await mkdir(join(root, "disks", "data"), { recursive: true });
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("makes disk.img sparse at the claim's size when it is absent", async () => {
    expect(await claimDisk("data", info("64Mi"), dirs(), false)).toEqual({ path: disk(), type: "file" });
    const made = await stat(disk());
    expect(made.size).toBe(64 * MIB);
    expect(made.blocks * 512).toBeLessThan(MIB);
  });

  it("grows a smaller image to the claim's size less the overhead, and never shrinks one", async () => {
    await writeFile(disk(), Buffer.alloc(MIB, 1));
    await claimDisk("data", info("64Mi"), dirs(), false);
    expect((await stat(disk())).size).toBe(Math.floor((0.945 * 64 * MIB) / MIB) * MIB);
    await claimDisk("data", info("8Mi"), dirs(), false);
    expect((await stat(disk())).size).toBe(Math.floor((0.945 * 64 * MIB) / MIB) * MIB);
  });

  it("refuses a disk.img that is a symbolic link, and leaves its target alone", async () => {
    const target = join(root, "elsewhere");
    await writeFile(target, "not a disk");
    await symlink(target, disk());
    await expect(claimDisk("data", info("64Mi"), dirs(), false)).rejects.toThrow(
      "disk.img on the claim data is a symbolic link; the disk must be a regular file at the claim's root",
    );
    expect((await stat(target)).size).toBe("not a disk".length);
  });

  it("refuses to make a disk on a read-only claim, saying to fill it first", async () => {
    await expect(claimDisk("data", info("64Mi"), dirs(), true)).rejects.toThrow(
      "the read-only claim data holds no disk.img; fill the claim with a disk image first",
    );
  });
});
