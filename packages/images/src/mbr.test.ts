import { execFile } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { mbrPartitionTable } from "./mbr.ts";

describe("mbrPartitionTable", { timeout: 30_000 }, () => {
  it("writes entries at their offsets and the boot signature", () => {
    const table = mbrPartitionTable([{ type: 0x0e, startSector: 2048, sectors: 131072, bootable: true }]);
    expect(table.length).toBe(66);
    expect(table[0]).toBe(0x80);
    expect(table[4]).toBe(0x0e);
    expect(table.readUInt32LE(8)).toBe(2048);
    expect(table.readUInt32LE(12)).toBe(131072);
    expect(table.subarray(16, 64).every((b) => b === 0)).toBe(true);
    expect([...table.subarray(64)]).toEqual([0x55, 0xaa]);
  });

  it("refuses more than four partitions and partitions out of reach", () => {
    const p = { type: 0x83, startSector: 1, sectors: 1 };
    expect(() => mbrPartitionTable([p, p, p, p, p])).toThrow(/at most 4 partitions/);
    expect(() => mbrPartitionTable([{ type: 0x83, startSector: 2 ** 32 - 1, sectors: 2 }])).toThrow(
      /partition 1 lies outside/,
    );
  });

  it("is read back by a real partition reader (busybox fdisk)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mbr-"));
    try {
      const disk = join(dir, "disk.img");
      const file = await open(disk, "w");
      await file.truncate(64 * 2 ** 20);
      await file.write(
        mbrPartitionTable([
          { type: 0x0e, startSector: 2048, sectors: 32768, bootable: true },
          { type: 0x83, startSector: 34816, sectors: 96256 },
        ]),
        0,
        66,
        446,
      );
      await file.close();
      const { stdout } = await promisify(execFile)("busybox", ["fdisk", "-l", "-u", disk]);
      expect(stdout).toMatch(new RegExp(`disk\\.img1 \\*\\s+.*2048\\s+34815\\s.*\\be\\s`));
      expect(stdout).toMatch(/disk\.img2\s+.*34816\s+131071\s.*\b83\s/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
