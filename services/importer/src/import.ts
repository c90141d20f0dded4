import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { createSparseFile, entryAt, growFile } from "@kubevirt-ts/runtime";
import { CLAIM_DISK_FILE, type ImporterSource } from "@kubevirt-ts/kubevirt-api";

// Fills a claim with its DataVolume's disk, as CDI's importer does: the
// source is fetched (downloaded, copied out of a containerDisk image, or
// read from another claim), checked with qemu-img (no backing file; no
// larger than the disk asked for), converted to raw and grown to the disk's
// size. It is written as disk.img.partial and renamed to disk.img only when
// whole, so a half-written disk is never taken for a disk; a disk.img
// already there is a finished import (a retry after the rename) and is kept.

/** The importer's temporary names on the claim: the download (or upload), and the disk until it is whole. */
export const DOWNLOAD_FILE = `${CLAIM_DISK_FILE}.download`;
const PARTIAL_FILE = `${CLAIM_DISK_FILE}.partial`;

export interface ImportOptions {
  /** The sources fetched here; an upload is received by upload.ts. */
  source: Exclude<ImporterSource, "upload">;
  endpoint: string;
  headers: string[];
  basicAuth?: { user: string; password: string };
  diskBytes: number;
  targetDir: string;
  sourceDir: string;
}

/** A failure whose message says what to do: the importer's termination message, and so the DataVolume's. */
export class ImportError extends Error {}

interface ImageInfo {
  format: string;
  "virtual-size": number;
  "backing-filename"?: string;
}

function run(command: string, args: string[], onStdout?: (text: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      onStdout?.(stdout.slice(-200));
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(stdout);
      else reject(new ImportError(`${command} ${args[0] ?? ""} failed: ${stderr.trim() || `exit ${String(code)}`}`));
    });
  });
}

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(2)} GiB`;

/** What qemu-img says the image is; an image with a backing file is refused (it would read another file). */
export async function imageInfo(path: string): Promise<ImageInfo> {
  const info = JSON.parse(await run("qemu-img", ["info", "--output=json", path])) as ImageInfo;
  if (info["backing-filename"] !== undefined) throw new ImportError(`the image has a backing file (${info["backing-filename"]}); give a self-contained image (qemu-img convert it first)`);
  return info;
}

/** The checks an image passes before it is written: it fits the disk asked for. */
export function checkFits(info: Pick<ImageInfo, "virtual-size">, diskBytes: number): void {
  const size = info["virtual-size"];
  if (size > diskBytes) {
    throw new ImportError(`the image's virtual size is ${gib(size)} (${String(size)} bytes), larger than the disk asked for, ${gib(diskBytes)}: ask for at least ${String(Math.ceil(size / GIB))}Gi in the DataVolume's storage request`);
  }
}

const XZ_MAGIC = Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]);

/** The chunks as they are, or gunzipped when they begin as gzip does (CDI detects compression by content, not by name). */
export async function* decompressed(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) return;
  const head: Buffer = first.value;
  const all = async function* () {
    yield head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  };
  if (head.subarray(0, XZ_MAGIC.length).equals(XZ_MAGIC)) throw new ImportError("the image is xz-compressed, which the importer cannot read; give it uncompressed or gzip-compressed");
  if (head[0] === 0x1f && head[1] === 0x8b) {
    yield* Readable.from(all()).pipe(createGunzip()) as AsyncIterable<Buffer>;
    return;
  }
  yield* all();
}

/** Downloads the http source to `path`, reporting the share of the announced length that is in. */
async function download(options: ImportOptions, path: string, report: (fraction: number) => void): Promise<void> {
  const headers = new Headers();
  for (const header of options.headers) {
    const colon = header.indexOf(":");
    headers.append(header.slice(0, colon).trim(), header.slice(colon + 1).trim());
  }
  if (options.basicAuth) headers.set("authorization", `Basic ${Buffer.from(`${options.basicAuth.user}:${options.basicAuth.password}`).toString("base64")}`);
  let response: Response;
  try {
    response = await fetch(options.endpoint, { headers, redirect: "follow" });
  } catch (error) {
    throw new ImportError(`Unable to connect to http data source ${options.endpoint}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : String(error)}`);
  }
  if (!response.ok || !response.body) throw new ImportError(`the http data source answered ${String(response.status)} ${response.statusText} for ${options.endpoint}`);
  const length = Number(response.headers.get("content-length") ?? 0);
  let received = 0;
  const counted = async function* (body: AsyncIterable<Uint8Array>) {
    for await (const chunk of body) {
      received += chunk.byteLength;
      if (length > 0) report(Math.min(received / length, 0.99));
      yield Buffer.from(chunk);
    }
  };
  await pipeline(Readable.from(decompressed(counted(response.body as unknown as AsyncIterable<Uint8Array>))), createWriteStream(path, { flags: "wx", mode: 0o660 }));
}

/** The disk copied out of a containerDisk image: the one regular file in the folder. */
async function registryDisk(dir: string): Promise<string> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = entries.filter((e) => e.isFile());
  if (files.length === 0) throw new ImportError("the containerDisk image holds no disk under /disk; give an image built as a containerDisk (its disk in /disk)");
  return join(dir, files[0]?.name ?? "");
}

/** Whether a regular file is at the path; anything else there (a link, a folder) is refused. */
async function isFile(path: string): Promise<boolean> {
  const entry = await entryAt(path);
  if (entry && !entry.isFile()) throw new ImportError(`${path} is not a regular file; remove it from the claim`);
  return entry !== undefined;
}

/** Converts the image at `source` (a blank disk when undefined) to the raw disk.img, grown to its size; disk.img appears only when whole. */
export async function writeDisk(source: string | undefined, options: Pick<ImportOptions, "targetDir" | "diskBytes">, report: (fraction: number) => void): Promise<void> {
  const partial = join(options.targetDir, PARTIAL_FILE);
  await rm(partial, { force: true });
  if (source === undefined) {
    await createSparseFile(partial, options.diskBytes);
  } else {
    const info = await imageInfo(source);
    checkFits(info, options.diskBytes);
    await run("qemu-img", ["convert", "-p", "-f", info.format, "-O", "raw", source, partial], (text) => {
      const match = [...text.matchAll(/\((\d+(?:\.\d+)?)\/100%\)/g)].at(-1)?.[1];
      if (match !== undefined) report(Number(match) / 100);
    });
  }
  // Grown to the disk's size and made durable before it is named disk.img.
  if (!(await growFile(partial, options.diskBytes, { sync: true }))) throw new ImportError(`${partial} is not a regular file`);
  await rename(partial, join(options.targetDir, CLAIM_DISK_FILE));
}

/** Whether the claim already holds its finished disk (a retry after the rename): then it is kept as it is. */
export const diskIsIn = (targetDir: string): Promise<boolean> => isFile(join(targetDir, CLAIM_DISK_FILE));

export async function importDisk(options: ImportOptions, report: (fraction: number) => void): Promise<"imported" | "already there"> {
  if (await diskIsIn(options.targetDir)) return "already there";
  const downloaded = join(options.targetDir, DOWNLOAD_FILE);
  // What an earlier, interrupted attempt left.
  await rm(downloaded, { force: true });
  let source: string | undefined;
  if (options.source === "http") {
    await download(options, downloaded, report);
    source = downloaded;
  } else if (options.source === "registry") {
    source = await registryDisk(options.sourceDir);
  } else if (options.source === "pvc") {
    source = join(options.sourceDir, CLAIM_DISK_FILE);
    if (!(await isFile(source))) throw new ImportError(`the source claim holds no ${CLAIM_DISK_FILE}; copy a claim that holds a disk`);
  }
  // The download's share of the progress is its own; conversion reports the copies'.
  await writeDisk(source, options, options.source === "http" ? () => undefined : report);
  await rm(downloaded, { force: true });
  report(1);
  return "imported";
}
