import { timingSafeEqual } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { once } from "node:events";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { UploadPath } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import {
  DOWNLOAD_FILE,
  ImportError,
  bounded,
  checkFits,
  decompressed,
  diskIsIn,
  imageInfo,
  sourceLimit,
  writeDisk,
} from "./import.ts";

// The upload server, CDI's upload server role: the importer started for a
// DataVolume whose source is `upload`. It takes one image at a time from the
// upload proxy (virt-api, which checked the user's upload token and presents
// this pod's key), writes it to the claim (gunzipped when it is gzip), checks
// it is a disk image that fits, converts it as an import is, and then ends.
// A refused or broken-off upload leaves nothing behind and the server ready
// for the next try. `sync` answers once the disk is in; `async` once the image
// is received and checked, the conversion following.

export interface UploadServerOptions {
  port: number;
  host?: string;
  /** The key the upload proxy presents as a bearer token. */
  key: string;
  targetDir: string;
  diskBytes: number;
  /** The share of the upload that is in (0 to 1). */
  report: (fraction: number) => void;
  log: Logger;
  /** Called once the disk is in, or when the conversion of an accepted async upload failed. */
  done: (outcome: { ok: true } | { ok: false; error: unknown }) => void;
}

const SECTOR = 512;

/**
 * Refuses what is not a disk image: qemu-img finds no format in it (it reads as raw) and it is not a whole number of
 * 512-byte sectors, as no disk and no ISO is. A qcow2, vmdk or other format qemu-img knows passes, and so does raw.
 */
export function checkIsDiskImage(info: { format: string }, bytes: number): void {
  if (bytes === 0) throw new ImportError("the upload is empty: upload a qcow2, raw or ISO image");
  if (info.format === "raw" && bytes % SECTOR !== 0) {
    throw new ImportError(
      `the upload is not a disk image: qemu-img finds no image format in it, and its ${String(bytes)} bytes ` +
        `are not a whole number of ${String(SECTOR)}-byte sectors, as a raw disk's or an ISO's are; upload a ` +
        "qcow2, raw or ISO image",
    );
  }
}

function bearerMatches(req: IncomingMessage, key: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "");
  const wanted = Buffer.from(key);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

const answer = (res: ServerResponse, code: number, text: string) => {
  if (!res.headersSent) res.writeHead(code, { "content-type": "text/plain; charset=utf-8", connection: "close" });
  res.end(text === "" ? "" : `${text}\n`);
};

export async function startUploadServer(options: UploadServerOptions): Promise<Server> {
  const { log, targetDir } = options;
  const received = join(targetDir, DOWNLOAD_FILE);
  let busy = false;

  /** Writes the request's body to the claim, counting it against its announced length. */
  async function receive(req: IncomingMessage): Promise<number> {
    const length = Number(req.headers["content-length"] ?? 0);
    let count = 0;
    const counted = async function* () {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        count += chunk.length;
        if (length > 0) options.report(Math.min(count / length, 0.99));
        yield chunk;
      }
    };
    const brokeOff = () =>
      new ImportError(`the upload broke off after ${String(count)} of ${String(length)} bytes; upload it again`);
    try {
      const limit = sourceLimit(options.diskBytes);
      await pipeline(
        Readable.from(bounded(decompressed(bounded(counted(), limit, "the upload")), limit, "the uploaded image")),
        createWriteStream(received, { flags: "w", mode: 0o660 }),
      );
    } catch (error) {
      if (error instanceof ImportError || !(req.readableAborted || req.destroyed)) throw error;
      throw brokeOff();
    }
    if (req.readableAborted || (length > 0 && count < length)) throw brokeOff();
    return (await stat(received)).size;
  }

  async function upload(req: IncomingMessage, res: ServerResponse, async: boolean): Promise<void> {
    if (busy) {
      answer(res, 409, "an upload to this DataVolume is in progress; wait for it to end or cancel it");
      return;
    }
    if (await diskIsIn(targetDir)) {
      answer(res, 409, "the DataVolume's disk is already uploaded");
      return;
    }
    busy = true;
    let accepted = false;
    try {
      const bytes = await receive(req);
      const info = await imageInfo(received);
      checkIsDiskImage(info, bytes);
      checkFits(info, options.diskBytes);
      log.info("an upload is in, converting it", { bytes, format: info.format, async });
      accepted = true;
      if (async) answer(res, 200, "");
      await writeDisk(received, options, () => undefined);
      await rm(received, { force: true });
      options.report(1);
      if (!async) answer(res, 200, "");
      options.done({ ok: true });
    } catch (error) {
      await rm(received, { force: true }).catch(() => undefined);
      if (!accepted) {
        busy = false;
        options.report(0);
        const refused = error instanceof ImportError;
        log.warn("an upload was refused", { error });
        answer(res, refused ? 400 : 500, refused ? error.message : `the upload failed: ${String(error)}`);
        return;
      }
      if (!async)
        answer(res, 500, `the upload's conversion failed: ${error instanceof Error ? error.message : String(error)}`);
      options.done({ ok: false, error });
    }
  }

  const server = createServer({ requestTimeout: 0 }, (req, res) => {
    if (!bearerMatches(req, options.key)) {
      answer(res, 401, "the upload server takes uploads from the upload proxy only");
      return;
    }
    const path = new URL(req.url ?? "/", "http://upload").pathname;
    const async = path === UploadPath.async;
    if (path !== UploadPath.sync && !async) {
      answer(res, 404, `not found: uploads go to ${UploadPath.sync} or ${UploadPath.async}`);
      return;
    }
    if (req.method === "HEAD") {
      answer(res, 200, "");
      return;
    }
    if (req.method !== "POST") {
      answer(res, 405, "an upload is sent with POST");
      return;
    }
    void upload(req, res, async);
  });
  server.listen(options.port, options.host);
  await once(server, "listening");
  return server;
}
