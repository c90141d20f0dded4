import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUploadServer } from "../src/upload.ts";
import { imageInfo, qcow2With } from "./images.ts";

// The upload server against the real qemu-img, with real HTTP uploads on
// loopback: what it keeps, what it refuses, and that a refusal leaves it
// ready for the next try.

const MIB = 1024 * 1024;
const KEY = "the-pods-key";
let root: string;

interface Running {
  server: Server;
  url: (path: string) => string;
  dir: string;
  outcomes: { ok: boolean }[];
  progress: number[];
}

async function start(diskBytes = 64 * MIB): Promise<Running> {
  const dir = await mkdtemp(join(root, "claim-"));
  const outcomes: { ok: boolean }[] = [];
  const progress: number[] = [];
  const server = await startUploadServer({
    port: 0,
    host: "127.0.0.1",
    key: KEY,
    targetDir: dir,
    diskBytes,
    report: (f) => progress.push(f),
    log: createLogger({ component: "test", level: "error" }),
    done: (outcome) => outcomes.push({ ok: outcome.ok }),
  });
  const port = (server.address() as AddressInfo).port;
  return { server, dir, outcomes, progress, url: (path) => `http://127.0.0.1:${String(port)}${path}` };
}

const post = (url: string, body: Buffer, key = KEY) =>
  fetch(url, {
    method: "POST",
    body,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream" },
  });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "upload-"));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("the upload server", () => {
  it("takes a qcow2 image, converts it to the raw disk of the size asked for, and answers once it is in", async () => {
    const s = await start();
    const image = qcow2With(join(root, "a.qcow2"), 2, "uploaded marker");
    const answer = await post(s.url("/v1beta1/upload"), image);
    expect(answer.status).toBe(200);
    expect(s.outcomes).toEqual([{ ok: true }]);
    expect(await readdir(s.dir)).toEqual(["disk.img"]);
    const info = imageInfo(join(s.dir, "disk.img"));
    expect(info).toMatchObject({ format: "raw", "virtual-size": 64 * MIB });
    expect(readFileSync(join(s.dir, "disk.img")).subarray(0, 15).toString()).toBe("uploaded marker");
    expect(s.progress.at(-1)).toBe(1);
    s.server.close();
  });

  it(
    "refuses what is not a disk image, an image larger than the disk, and a caller " +
      "without the pod's key, and stays ready",
    async () => {
      const s = await start(4 * MIB);
      const text = await post(s.url("/v1beta1/upload"), Buffer.from("this is a text file, not a disk\n"));
      expect(text.status).toBe(400);
      expect(await text.text()).toMatch(
        /the upload is not a disk image: qemu-img finds no image format.*32 bytes are not a whole number of 512-byte/,
      );
      const large = await post(s.url("/v1beta1/upload"), qcow2With(join(root, "b.qcow2"), 8, "too large"));
      expect(large.status).toBe(400);
      expect(await large.text()).toMatch(/larger than the disk asked for/);
      const stranger = await post(s.url("/v1beta1/upload"), Buffer.alloc(MIB), "not-the-key");
      expect(stranger.status).toBe(401);
      expect(await readdir(s.dir)).toEqual([]);
      expect(s.outcomes).toEqual([]);
      // Still ready: a gzip-compressed raw disk goes in.
      const raw = Buffer.alloc(MIB);
      raw.write("gzipped raw");
      const async = await post(s.url("/v1beta1/upload-async"), gzipSync(raw));
      expect(async.status).toBe(200);
      await expect.poll(() => s.outcomes).toEqual([{ ok: true }]);
      expect(readFileSync(join(s.dir, "disk.img")).subarray(0, 11).toString()).toBe("gzipped raw");
      // The disk is in: another upload is refused.
      const again = await post(s.url("/v1beta1/upload"), raw);
      expect(again.status).toBe(409);
      s.server.close();
    },
  );
});
