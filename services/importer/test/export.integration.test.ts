import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import type { Server } from "node:https";
import { request } from "node:https";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { EXPORT_TOKEN_HEADER, ExportPath } from "@kubevirt-ts/node-contract";
import { createLogger, selfSignedServingCertificate } from "@kubevirt-ts/runtime";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startExportServer } from "../src/export-server.ts";

// The export server over real HTTPS on loopback, with the certificate the controller would make: what it serves to
// whoever has the token, what it refuses, and that a client that goes away ends only its own download.

const MIB = 1024 * 1024;
const TOKEN = "a-token-of-twenty-ch";
const HOST = "virt-export-e.ns.svc";
const tls = selfSignedServingCertificate({ commonName: HOST, dnsNames: [HOST], validForMs: 3_600_000 });
let root: string;
let disk: Buffer;
const servers: Server[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "export-"));
  await mkdir(join(root, "rootdisk"));
  // A disk with data at its start and a hole after it, as a sparse claim's disk.img is.
  disk = Buffer.concat([randomBytes(MIB), Buffer.alloc(3 * MIB)]);
  await writeFile(join(root, "rootdisk/disk.img"), disk.subarray(0, MIB));
  await truncate(join(root, "rootdisk/disk.img"), 4 * MIB);
  await mkdir(join(root, "big"));
  await writeFile(join(root, "big/disk.img"), "");
  await truncate(join(root, "big/disk.img"), 256 * MIB);
});

afterAll(async () => {
  for (const server of servers) server.close();
  await rm(root, { recursive: true, force: true });
});

async function start(maxDownloads?: number): Promise<number> {
  const server = await startExportServer({
    port: 0,
    host: "127.0.0.1",
    volumes: [
      { name: "rootdisk", dir: join(root, "rootdisk") },
      { name: "big", dir: join(root, "big") },
    ],
    token: () => Promise.resolve(TOKEN),
    tls: { cert: tls.certPem, key: tls.keyPem },
    manifests: {
      internal: [{ apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", metadata: { name: "vm" } }],
      headerSecretName: "header-secret-e",
    },
    log: createLogger({ component: "test", level: "error" }),
    ...(maxDownloads !== undefined ? { maxDownloads } : {}),
  });
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

interface Options {
  token?: string;
  inQuery?: boolean;
  method?: string;
  accept?: string;
}

/** Opens a request to the server, verifying it with its certificate as the export's only root. */
function open(port: number, path: string, options: Options = {}): Promise<IncomingMessage> {
  const query = options.inQuery && options.token ? `?${EXPORT_TOKEN_HEADER}=${options.token}` : "";
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: path + query,
        method: options.method ?? "GET",
        ca: tls.certPem,
        servername: HOST,
        headers: {
          ...(options.token && !options.inQuery ? { [EXPORT_TOKEN_HEADER]: options.token } : {}),
          ...(options.accept ? { accept: options.accept } : {}),
        },
      },
      resolve,
    );
    req.on("error", reject);
    req.end();
  });
}

async function get(port: number, path: string, options: Options = {}): Promise<{ status: number; body: Buffer }> {
  const res = await open(port, path, options);
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode ?? 0, body: Buffer.concat(chunks) };
}

describe("the export server", { timeout: 60_000 }, () => {
  it("answers its readiness path without a token, and nothing else without the right one", async () => {
    const port = await start();
    expect((await get(port, ExportPath.ready)).status).toBe(200);
    expect((await get(port, ExportPath.raw("rootdisk"))).status).toBe(401);
    const wrong = await get(port, ExportPath.raw("rootdisk"), { token: "b-token-of-twenty-ch" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.toString()).toContain(EXPORT_TOKEN_HEADER);
    expect((await get(port, ExportPath.raw("rootdisk"), { token: TOKEN, method: "POST" })).status).toBe(405);
    expect((await get(port, ExportPath.raw("elsewhere"), { token: TOKEN })).status).toBe(404);
  });

  it("serves a disk raw with the token in its header, and gzip-compressed with it in the query", async () => {
    const port = await start();
    const raw = await get(port, ExportPath.raw("rootdisk"), { token: TOKEN });
    expect(raw.status).toBe(200);
    expect(raw.body.equals(disk)).toBe(true);
    const gz = await get(port, ExportPath.gzip("rootdisk"), { token: TOKEN, inQuery: true });
    expect(gz.status).toBe(200);
    expect(gz.body.length).toBeLessThan(disk.length);
    expect(gunzipSync(gz.body).equals(disk)).toBe(true);
  });

  it("serves the VM's manifests as a JSON List or YAML, and the header Secret CDI's http source reads", async () => {
    const port = await start();
    const json = JSON.parse((await get(port, ExportPath.manifests("internal"), { token: TOKEN })).body.toString()) as {
      kind: string;
      items: { kind: string }[];
    };
    expect(json.kind).toBe("List");
    expect(json.items.map((i) => i.kind)).toEqual(["VirtualMachine"]);
    const yaml = await get(port, ExportPath.manifests("internal"), { token: TOKEN, accept: "application/yaml" });
    expect(parseAllDocuments(yaml.body.toString()).map((d) => (d.toJS() as { kind: string }).kind)).toEqual([
      "VirtualMachine",
    ]);
    const secret = JSON.parse((await get(port, ExportPath.secret("internal"), { token: TOKEN })).body.toString()) as {
      items: { metadata: { name: string }; stringData: { token: string } }[];
    };
    expect(secret.items[0]).toMatchObject({
      metadata: { name: "header-secret-e" },
      stringData: { token: `${EXPORT_TOKEN_HEADER}:${TOKEN}` },
    });
    // No external manifests were given: the external path is not served.
    expect((await get(port, ExportPath.manifests("external"), { token: TOKEN })).status).toBe(404);
  });

  it("refuses a download beyond its bound while one runs, and a client that goes away frees its place", async () => {
    const port = await start(1);
    // The first download is opened and not read: backpressure holds it on the server.
    const held = await open(port, ExportPath.raw("big"), { token: TOKEN });
    expect(held.statusCode).toBe(200);
    const refused = await get(port, ExportPath.raw("rootdisk"), { token: TOKEN });
    expect(refused.status).toBe(503);
    expect(refused.body.toString()).toContain("try again");
    held.destroy();
    await expect
      .poll(async () => (await get(port, ExportPath.raw("rootdisk"), { token: TOKEN })).status, {
        timeout: 10_000,
        interval: 200,
      })
      .toBe(200);
  });
});
