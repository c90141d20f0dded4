import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ImportOptions, importDisk } from "../src/import.ts";
import { imageInfo, qcow2With, qemuImg } from "./images.ts";

// The importer against the real qemu-img and a real HTTP server on
// loopback: each source fills a folder as it would a claim.

const MIB = 1024 * 1024;
let root: string;
let server: Server;
let base: string;
const served = new Map<string, Buffer>();


async function target(): Promise<{ targetDir: string; sourceDir: string }> {
  const dir = await mkdtemp(join(root, "claim-"));
  await mkdir(join(dir, "target"));
  await mkdir(join(dir, "source"));
  return { targetDir: join(dir, "target"), sourceDir: join(dir, "source") };
}

const options = (dirs: { targetDir: string; sourceDir: string }, rest: Partial<ImportOptions>): ImportOptions => ({ source: "blank", endpoint: "", headers: [], diskBytes: 64 * MIB, ...dirs, ...rest });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "importer-"));
  server = createServer((req, res) => {
    if (req.headers["x-token"] !== "secret" && req.url?.startsWith("/private")) {
      res.writeHead(403).end();
      return;
    }
    const body = served.get(req.url ?? "");
    if (!body) {
      res.writeHead(404, "Not Found").end();
      return;
    }
    res.writeHead(200, { "content-length": String(body.length) }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});

describe("importDisk", () => {
  it("makes a blank disk sparse at the size asked for", async () => {
    const dirs = await target();
    const progress: number[] = [];
    expect(await importDisk(options(dirs, { source: "blank" }), (f) => progress.push(f))).toBe("imported");
    const disk = await stat(join(dirs.targetDir, "disk.img"));
    expect(disk.size).toBe(64 * MIB);
    expect(disk.blocks * 512).toBeLessThan(MIB);
    expect(progress.at(-1)).toBe(1);
  });

  it("downloads a gzip-compressed qcow2 over HTTP with the headers asked for, converts it to raw and grows it to the disk's size", async () => {
    const dirs = await target();
    const image = join(root, "served.qcow2");
    qcow2With(image, 8, "kubevirt-ts was here");
    served.set("/private/disk.qcow2.gz", gzipSync(readFileSync(image)));
    const progress: number[] = [];
    await importDisk(options(dirs, { source: "http", endpoint: `${base}/private/disk.qcow2.gz`, headers: ["X-Token: secret"] }), (f) => progress.push(f));
    const disk = join(dirs.targetDir, "disk.img");
    expect(imageInfo(disk)).toMatchObject({ format: "raw", "virtual-size": 64 * MIB });
    expect(readFileSync(disk).subarray(0, 20).toString()).toBe("kubevirt-ts was here");
    expect(progress.some((f) => f > 0 && f < 1)).toBe(true);
    // Nothing but the disk is left on the claim.
    expect(await readdir(dirs.targetDir)).toEqual(["disk.img"]);
  });

  it("says what the server answered when the image is not there, and leaves no disk", async () => {
    const dirs = await target();
    await expect(importDisk(options(dirs, { source: "http", endpoint: `${base}/missing.img` }), () => undefined)).rejects.toThrow(`the http data source answered 404 Not Found for ${base}/missing.img`);
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("refuses an image larger than the disk asked for, leaving no disk.img behind", async () => {
    const dirs = await target();
    const image = join(root, "big.qcow2");
    qemuImg("create", "-f", "qcow2", image, "128M");
    served.set("/big.qcow2", readFileSync(image));
    await expect(importDisk(options(dirs, { source: "http", endpoint: `${base}/big.qcow2` }), () => undefined)).rejects.toThrow(/virtual size is 0.13 GiB .* larger than the disk asked for, 0.06 GiB: ask for at least 1Gi/);
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("refuses an image with a backing file, which would read another file", async () => {
    const dirs = await target();
    const backing = join(root, "backing.qcow2");
    qemuImg("create", "-f", "qcow2", backing, "8M");
    qemuImg("create", "-f", "qcow2", "-F", "qcow2", "-b", backing, join(dirs.sourceDir, "disk.img"));
    await expect(importDisk(options(dirs, { source: "pvc" }), () => undefined)).rejects.toThrow(/has a backing file .*give a self-contained image/);
  });

  it("refuses an xz-compressed image by name", async () => {
    const dirs = await target();
    served.set("/disk.img.xz", Buffer.concat([Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]), Buffer.alloc(64)]));
    await expect(importDisk(options(dirs, { source: "http", endpoint: `${base}/disk.img.xz` }), () => undefined)).rejects.toThrow(/xz-compressed.*uncompressed or gzip-compressed/);
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("copies another claim's disk, grown to the disk's size", async () => {
    const dirs = await target();
    qcow2With(join(dirs.sourceDir, "disk.img"), 16, "cloned");
    const progress: number[] = [];
    await importDisk(options(dirs, { source: "pvc", diskBytes: 32 * MIB }), (f) => progress.push(f));
    const disk = join(dirs.targetDir, "disk.img");
    expect(imageInfo(disk)["virtual-size"]).toBe(32 * MIB);
    expect(readFileSync(disk).subarray(0, 6).toString()).toBe("cloned");
  });

  it("takes a containerDisk's disk copied out of its image", async () => {
    const dirs = await target();
    qcow2With(join(dirs.sourceDir, "guest.qcow2"), 4, "from a registry");
    await importDisk(options(dirs, { source: "registry" }), () => undefined);
    expect(readFileSync(join(dirs.targetDir, "disk.img")).subarray(0, 15).toString()).toBe("from a registry");
  });

  it("keeps a disk.img already there (an import finished before a restart), and removes what an interrupted one left", async () => {
    const dirs = await target();
    await writeFile(join(dirs.targetDir, "disk.img"), "the guest's data");
    expect(await importDisk(options(dirs, { source: "blank" }), () => undefined)).toBe("already there");
    expect(readFileSync(join(dirs.targetDir, "disk.img"), "utf8")).toBe("the guest's data");

    const interrupted = await target();
    await writeFile(join(interrupted.targetDir, "disk.img.partial"), "half");
    await importDisk(options(interrupted, { source: "blank" }), () => undefined);
    expect((await readdir(interrupted.targetDir)).sort()).toEqual(["disk.img"]);
  });
});
