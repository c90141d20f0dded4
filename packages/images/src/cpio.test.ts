import { execFile } from "node:child_process";
import { mkdtemp, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { cpioArchive } from "./cpio.ts";

describe("cpioArchive", { timeout: 30_000 }, () => {
  const archive = cpioArchive([
    { path: "bin", type: "directory" },
    { path: "bin/tool", type: "file", data: Buffer.from("#!/bin/sh\necho hi\n"), mode: 0o755 },
    { path: "init", type: "symlink", target: "bin/tool" },
  ]);

  it("starts with the newc magic and ends with the trailer", () => {
    expect(archive.subarray(0, 6).toString()).toBe("070701");
    expect(archive.toString("latin1")).toContain("TRAILER!!!");
  });

  it("is read back by a real cpio implementation (busybox's, as the kernel's format)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cpio-"));
    try {
      await writeFile(join(dir, "a.cpio"), archive);
      await promisify(execFile)("sh", ["-c", `cd '${dir}' && busybox cpio -i < a.cpio`]);
      expect(await readFile(join(dir, "bin/tool"), "utf8")).toBe("#!/bin/sh\necho hi\n");
      expect(await readlink(join(dir, "init"))).toBe("bin/tool");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("gives the same bytes for the same files", () => {
    expect(
      cpioArchive([{ path: "x", type: "file", data: Buffer.from("1") }]).equals(
        cpioArchive([{ path: "x", type: "file", data: Buffer.from("1") }]),
      ),
    ).toBe(true);
  });
});
