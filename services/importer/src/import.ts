import { createWriteStream } from "node:fs";
import { readdir, rename, rm } from "node:fs/promises";
import type { BlockList } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import {
  type ImageInfo,
  ImageRefused,
  QEMU_IMG_LIMITS,
  createSparseFile,
  entryAt,
  growFile,
  imagePath,
  probeImage,
  qemuImg,
} from "@kubevirt-ts/runtime";
import { CLAIM_DISK_FILE } from "@kubevirt-ts/vm-rules";
import type { ImporterSource } from "@kubevirt-ts/node-contract";
import { ImportError } from "./errors.ts";
import { httpGet } from "./http-source.ts";

export { ImportError };

// Fills a claim with its DataVolume's disk, as CDI's importer does: the
// source is fetched (downloaded, copied out of a containerDisk image, or
// read from another claim), checked with qemu-img (probeImage: one file,
// no backing or data file; no larger than the disk asked for), converted
// to raw (qemu-img told the format: a claim's is raw) and grown to the disk's
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
  /** The pvc source's disk is open by a running, quiesced VM: read it despite QEMU's lock (qemu-img -U). */
  sourceInUse?: boolean;
  /** Where the http source's redirects may not lead (http-source.ts's redirectDenyList). */
  redirectDenyList: BlockList;
  /** The PEM certificates the http source's server is verified with (its certConfigMap). */
  ca?: string | undefined;
}

/** Refusals of the image itself become the importer's own, whose message is the DataVolume's. */
async function refusedAsImportError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw error instanceof ImageRefused ? new ImportError(error.message) : error;
  }
}

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(2)} GiB`;

/**
 * What qemu-img says the image is (runtime's probeImage: a self-contained file of a format taken); `raw` when known.
 */
export const imageInfo = (path: string, format?: "raw", shared = false): Promise<ImageInfo> =>
  refusedAsImportError(() => probeImage(path, { ...(format ? { format } : {}), ...(shared ? { shared } : {}) }));

/** The checks an image passes before it is written: it fits the disk asked for. */
export function checkFits(info: Pick<ImageInfo, "virtual-size">, diskBytes: number): void {
  const size = info["virtual-size"];
  if (size > diskBytes) {
    throw new ImportError(
      `the image's virtual size is ${gib(size)} (${String(size)} bytes), larger than the disk asked ` +
        `for, ${gib(diskBytes)}: ask for at least ${String(Math.ceil(size / GIB))}Gi in the DataVolume's ` +
        "storage request",
    );
  }
}

/**
 * The most bytes a source of a disk of `diskBytes` may hold once decompressed: the disk, and a qcow2's metadata at its
 * smallest clusters (an 8-byte L2 entry per 512 bytes, 1/64). Reading stops there.
 */
export const sourceLimit = (diskBytes: number): number => diskBytes + Math.ceil(diskBytes / 64) + 1024 * 1024;

/** The chunks, ended with an ImportError once they add up to more than `limit` bytes: nothing past it is written. */
export async function* bounded(source: AsyncIterable<Buffer>, limit: number, what: string): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.length;
    if (total > limit)
      throw new ImportError(
        `${what} holds more than ${String(limit)} bytes, more than an image of the disk asked for can ` +
          `(${gib(limit)}); ask for a larger disk or give a smaller image`,
      );
    yield chunk;
  }
}

const XZ_MAGIC = Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]);

/**
 * The chunks as they are, or gunzipped when they begin as gzip does (CDI detects compression by content, not by name).
 */
export async function* decompressed(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) return;
  const head: Buffer = first.value;
  const all = async function* () {
    yield head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  };
  if (head.subarray(0, XZ_MAGIC.length).equals(XZ_MAGIC))
    throw new ImportError(
      "the image is xz-compressed, which the importer cannot read; give it uncompressed or gzip-compressed",
    );
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
  if (options.basicAuth)
    headers.set(
      "authorization",
      `Basic ${Buffer.from(`${options.basicAuth.user}:${options.basicAuth.password}`).toString("base64")}`,
    );
  const response = await httpGet(options.endpoint, Object.fromEntries(headers), options.redirectDenyList, options.ca);
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.destroy();
    throw new ImportError(
      `the http data source answered ${String(status)} ${response.statusMessage ?? ""} for ${options.endpoint}`,
    );
  }
  const limit = sourceLimit(options.diskBytes);
  const length = Number(response.headers["content-length"] ?? 0);
  if (length > limit) {
    response.destroy();
    throw new ImportError(
      `the http data source announces ${String(length)} bytes, more than an image of the disk asked for can ` +
        `hold (${String(limit)} bytes, ${gib(limit)}); ask for a larger disk or give a smaller image`,
    );
  }
  let received = 0;
  const counted = async function* (body: AsyncIterable<Buffer>) {
    for await (const chunk of body) {
      received += chunk.byteLength;
      if (length > 0) report(Math.min(received / length, 0.99));
      yield chunk;
    }
  };
  try {
    await pipeline(
      Readable.from(
        bounded(
          decompressed(counted(bounded(response, limit, "the http data source's answer"))),
          limit,
          "the http data source's image",
        ),
      ),
      createWriteStream(path, { flags: "wx", mode: 0o660 }),
    );
  } finally {
    response.destroy();
  }
}

/** The disk copied out of a containerDisk image: the one regular file in the folder. */
async function registryDisk(dir: string): Promise<string> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = entries.filter((e) => e.isFile());
  if (files.length === 0)
    throw new ImportError(
      "the containerDisk image holds no disk under /disk; give an image built as a containerDisk (its disk in /disk)",
    );
  return join(dir, files[0]?.name ?? "");
}

/** Whether a regular file is at the path; anything else there (a link, a folder) is refused. */
async function isFile(path: string): Promise<boolean> {
  const entry = await entryAt(path);
  if (entry && !entry.isFile()) throw new ImportError(`${path} is not a regular file; remove it from the claim`);
  return entry !== undefined;
}

/**
 * Converts the image at `source` (a blank disk when undefined) to the raw disk.img, grown to its size; disk.img appears
 * only when whole.
 */
export async function writeDisk(
  source: string | undefined,
  options: Pick<ImportOptions, "targetDir" | "diskBytes" | "sourceInUse">,
  report: (fraction: number) => void,
  sourceFormat?: "raw",
): Promise<void> {
  const partial = join(options.targetDir, PARTIAL_FILE);
  await rm(partial, { force: true });
  if (source === undefined) {
    await createSparseFile(partial, options.diskBytes);
  } else {
    const shared = options.sourceInUse === true;
    const info = await imageInfo(source, sourceFormat, shared);
    checkFits(info, options.diskBytes);
    await refusedAsImportError(() =>
      qemuImg(
        [
          "convert",
          "-p",
          ...(shared ? ["-U"] : []),
          "-f",
          info.format,
          "-O",
          "raw",
          imagePath(source),
          imagePath(partial),
        ],
        QEMU_IMG_LIMITS.convert,
        (text) => {
          const match = [...text.matchAll(/\((\d+(?:\.\d+)?)\/100%\)/g)].at(-1)?.[1];
          if (match !== undefined) report(Number(match) / 100);
        },
      ),
    );
  }
  // Grown to the disk's size and made durable before it is named disk.img.
  if (!(await growFile(partial, options.diskBytes, { sync: true })))
    throw new ImportError(`${partial} is not a regular file`);
  await rename(partial, join(options.targetDir, CLAIM_DISK_FILE));
}

/** Whether the claim already holds its finished disk (a retry after the rename): then it is kept as it is. */
export const diskIsIn = (targetDir: string): Promise<boolean> => isFile(join(targetDir, CLAIM_DISK_FILE));

export async function importDisk(
  options: ImportOptions,
  report: (fraction: number) => void,
): Promise<"imported" | "already there"> {
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
    if (!(await isFile(source)))
      throw new ImportError(`the source claim holds no ${CLAIM_DISK_FILE}; copy a claim that holds a disk`);
  }
  // The download's share of the progress is its own; conversion reports the copies'.
  // A claim's disk is raw, whatever header a guest wrote into it; only the others' formats are probed.
  await writeDisk(
    source,
    options,
    options.source === "http" ? () => undefined : report,
    options.source === "pvc" ? "raw" : undefined,
  );
  await rm(downloaded, { force: true });
  report(1);
  return "imported";
}
