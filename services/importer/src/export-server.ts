import { timingSafeEqual } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Server, createServer } from "node:https";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { constants, createGzip } from "node:zlib";
import { EXPORT_TOKEN_HEADER, type ExportManifests, ExportPath } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import { stringify } from "yaml";

// The export server, KubeVirt's virt-exportserver role: the pod the controller makes for a VirtualMachineExport. It
// serves each exported claim's disk.img raw and gzip-compressed, and a VM's manifests, at KubeVirt's paths, over HTTPS
// with the certificate the controller made for it, to whoever presents the export's token (header or query parameter
// x-kubevirt-export-token). Nothing is held in memory: a disk flows from the file to the client as fast as the client
// takes it. A bounded number of downloads run at once; another is refused with 503, and its client retries.

export interface ExportVolume {
  /** The name in the links: the claim's (a snapshot's copy is named after the claim it copied). */
  name: string;
  /** The folder holding the claim's disk.img. */
  dir: string;
}

export interface ExportServerOptions {
  port: number;
  host?: string;
  volumes: readonly ExportVolume[];
  /** The token, read again for each request: a rotated Secret takes effect without a restart. */
  token: () => Promise<string>;
  tls: { cert: string; key: string };
  manifests?: ExportManifests | undefined;
  log: Logger;
  /** Downloads served at once; more are refused with 503. */
  maxDownloads?: number;
}

export const DEFAULT_MAX_DOWNLOADS = 4;
const DISK_FILE = "disk.img";

function tokenMatches(given: string, wanted: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(wanted);
  return wanted !== "" && a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request presents: KubeVirt's header, or its query parameter (a link pasted in a browser). */
function presentedToken(req: IncomingMessage, url: URL): string {
  const header = req.headers[EXPORT_TOKEN_HEADER];
  return (typeof header === "string" ? header : undefined) ?? url.searchParams.get(EXPORT_TOKEN_HEADER) ?? "";
}

const answer = (res: ServerResponse, code: number, text: string) => {
  if (!res.headersSent) res.writeHead(code, { "content-type": "text/plain; charset=utf-8" });
  res.end(`${text}\n`);
};

/** The manifests as KubeVirt's export server writes them: a JSON List, or YAML documents when asked for YAML. */
function renderManifests(items: readonly unknown[], accept: string | undefined): { type: string; body: string } {
  if (accept?.includes("yaml"))
    return { type: "application/yaml", body: items.map((i) => stringify(i, { lineWidth: 0 })).join("---\n") };
  return { type: "application/json", body: JSON.stringify({ apiVersion: "v1", kind: "List", items }, null, 2) };
}

export async function startExportServer(options: ExportServerOptions): Promise<Server> {
  const { log, volumes, manifests } = options;
  const maxDownloads = options.maxDownloads ?? DEFAULT_MAX_DOWNLOADS;
  let downloads = 0;
  const disks = new Map<string, { volume: ExportVolume; gzip: boolean }>();
  for (const volume of volumes) {
    disks.set(ExportPath.raw(volume.name), { volume, gzip: false });
    disks.set(ExportPath.gzip(volume.name), { volume, gzip: true });
  }

  async function download(res: ServerResponse, volume: ExportVolume, gzip: boolean): Promise<void> {
    if (downloads >= maxDownloads) {
      answer(res, 503, `${String(maxDownloads)} downloads are running from this export: try again when one ends`);
      return;
    }
    downloads += 1;
    const file = join(volume.dir, DISK_FILE);
    try {
      const { size } = await stat(file);
      res.writeHead(200, {
        "content-type": gzip ? "application/gzip" : "application/octet-stream",
        "content-disposition": `attachment; filename="${volume.name}.img${gzip ? ".gz" : ""}"`,
        ...(gzip ? {} : { "content-length": String(size) }),
      });
      const started = Date.now();
      await (gzip
        ? pipeline(createReadStream(file), createGzip({ level: constants.Z_BEST_SPEED }), res)
        : pipeline(createReadStream(file), res));
      log.info("a disk was downloaded", { volume: volume.name, gzip, bytes: size, ms: Date.now() - started });
    } catch (error) {
      // A client that goes away ends its own download, nothing else.
      log.warn("a download ended early", { volume: volume.name, gzip, error: String(error) });
      if (!res.headersSent) answer(res, 500, `the disk of ${volume.name} could not be read`);
      else res.destroy();
    } finally {
      downloads -= 1;
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://export");
    if (url.pathname === ExportPath.ready) {
      answer(res, 200, "ok");
      return;
    }
    const token = await options.token();
    if (!tokenMatches(presentedToken(req, url), token)) {
      answer(res, 401, `present the export's token in the ${EXPORT_TOKEN_HEADER} header or query parameter`);
      return;
    }
    if (req.method !== "GET") {
      answer(res, 405, "an export is read with GET");
      return;
    }
    const disk = disks.get(url.pathname);
    if (disk) {
      await download(res, disk.volume, disk.gzip);
      return;
    }
    for (const link of ["internal", "external"] as const) {
      if (url.pathname === ExportPath.manifests(link) && manifests) {
        const items = link === "internal" ? manifests.internal : manifests.external;
        if (!items) break;
        const { type, body } = renderManifests(items, req.headers.accept);
        res.writeHead(200, { "content-type": type });
        res.end(body);
        return;
      }
      if (url.pathname === ExportPath.secret(link) && manifests) {
        const secret = {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: manifests.headerSecretName },
          stringData: { token: `${EXPORT_TOKEN_HEADER}:${token}` },
        };
        const { type, body } = renderManifests([secret], req.headers.accept);
        res.writeHead(200, { "content-type": type });
        res.end(body);
        return;
      }
    }
    const served = [...disks.keys(), ...(manifests ? [ExportPath.manifests("internal")] : [])];
    answer(res, 404, `not found: this export serves ${served.join(", ")}`);
  }

  const server = createServer({ cert: options.tls.cert, key: options.tls.key }, (req, res) => {
    serve(req, res).catch((error: unknown) => {
      // The path only: the query may carry the token.
      log.error("a request failed", { path: new URL(req.url ?? "/", "https://export").pathname, error: String(error) });
      answer(res, 500, "the export server failed: see its log");
    });
  });
  // A client that sends nothing does not hold a socket for ever; a slow download is not cut (backpressure holds it).
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  server.maxHeadersCount = 64;
  server.listen(options.port, options.host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return server;
}

/** Reads a file the pod mounts, trimmed: the token and the certificate. */
export const readMounted = async (file: string): Promise<string> => (await readFile(file, "utf8")).trim();
