import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile } from "node:fs/promises";
import { type IncomingHttpHeaders, type IncomingMessage, type Server, createServer, request } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "./gateway.ts";

// The gateway as the chart runs it, with a self-signed certificate, and two real
// servers behind it standing where Next.js and virt-api would: plain
// requests, a streamed response, and a websocket-style upgrade must each
// reach the right one over HTTPS; plain HTTP on the same port is sent to
// https:// or refused; every response carries the security headers.

let next: Server;
let api: Server;
let upload: Server;
let gateway: Gateway;
let ca: Buffer;
const port = (server: { address(): unknown }) => (server.address() as AddressInfo).port;

async function listen(server: Server): Promise<Server> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

beforeAll(async () => {
  next = await listen(
    createServer((req, res) => res.end(`next ${req.url ?? ""} ${String(req.headers["content-security-policy"])}`)),
  );
  api = await listen(
    createServer((req, res) => {
      if (req.url?.startsWith("/trpc/stream")) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: one\n\n");
        setTimeout(() => res.end("data: two\n\n"), 50);
        return;
      }
      res.end(`api ${req.url ?? ""} ${req.headers.authorization ?? ""}`);
    }),
  );
  upload = await listen(createServer((req, res) => res.end(`upload ${req.url ?? ""}`)));
  api.on("upgrade", (req, socket) => {
    socket.write(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: " +
        `Upgrade\r\nSec-WebSocket-Protocol: ${String(req.headers["sec-websocket-protocol"])}\r\n\r\n`,
    );
    socket.on("data", (chunk: Buffer) => socket.write(chunk.toString().toUpperCase()));
  });
  // Self-signed, as the chart makes it: the certificate is its own CA.
  const dir = await mkdtemp(join(tmpdir(), "gateway-tls-"));
  await promisify(execFile)("openssl", [
    "req",
    "-x509",
    "-nodes",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-days",
    "1",
    "-subj",
    "/CN=kubevirt-ts-web",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    join(dir, "tls.key"),
    "-out",
    join(dir, "tls.crt"),
  ]);
  ca = await readFile(join(dir, "tls.crt"));
  gateway = startGateway({
    port: 0,
    host: "127.0.0.1",
    next: new URL(`http://127.0.0.1:${String(port(next))}`),
    api: new URL(`http://127.0.0.1:${String(port(api))}`),
    upload: new URL(`http://127.0.0.1:${String(port(upload))}`),
    tls: { cert: await readFile(join(dir, "tls.crt")), key: await readFile(join(dir, "tls.key")) },
  });
  await once(gateway.server, "listening");
});

afterAll(() => {
  gateway.stop();
  for (const server of [next, api, upload]) {
    server.closeAllConnections();
    server.close();
  }
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function answer(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve) => {
    let body = "";
    res
      .setEncoding("utf8")
      .on("data", (c: string) => (body += c))
      .on("end", () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
  });
}

/** A request over HTTPS, trusting only the test's CA. */
function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    httpsRequest({ host: "127.0.0.1", port: port(gateway.server), path, headers, ca }, (res) => {
      void answer(res).then(resolve);
    })
      .on("error", reject)
      .end();
  });
}

/** The same port, spoken to in clear. */
function plain(path: string, method = "GET"): Promise<Answer> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port: port(gateway.server), path, method }, (res) => {
      void answer(res).then(resolve);
    })
      .on("error", reject)
      .end();
  });
}

describe("the dashboard's gateway", () => {
  it("sends pages to Next.js and /trpc/ to the API over HTTPS, headers and all", async () => {
    expect((await get("/vms?ns=default")).body).toMatch(/^next \/vms\?ns=default /);
    expect((await get("/trpc/whoami", { authorization: "Bearer t0ken" })).body).toBe("api /trpc/whoami Bearer t0ken");
  });

  it("sends CDI's upload paths and exports' external links to virt-api's upload and export proxy", async () => {
    const link = "/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e/volumes/root/disk.img.gz";
    expect((await get(link)).body).toBe(`upload ${link}`);
    expect((await get("/v1beta1/upload-async")).body).toBe("upload /v1beta1/upload-async");
    // Not an export link: the page server's, as any other path.
    expect((await get("/api/other")).body).toMatch(/^next \/api\/other /);
  });

  it("streams the API's server-sent events through", async () => {
    expect((await get("/trpc/stream")).body).toBe("data: one\n\ndata: two\n\n");
  });

  it("tunnels a console's upgrade to the API, both ways, inside TLS", async () => {
    const req = httpsRequest({
      host: "127.0.0.1",
      port: port(gateway.server),
      ca,
      path: "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm/console",
      headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-protocol": "plain.kubevirt.io" },
    });
    req.end();
    const [res, socket] = (await once(req, "upgrade")) as [IncomingMessage, Socket];
    expect(res.headers["sec-websocket-protocol"]).toBe("plain.kubevirt.io");
    socket.write("ls\r");
    const [echo] = (await once(socket, "data")) as [Buffer];
    expect(echo.toString()).toBe("LS\r");
    socket.destroy();
  });

  it("puts a strict policy, nosniff and no referrer on pages and API answers alike", async () => {
    for (const path of ["/", "/trpc/whoami"]) {
      const { headers } = await get(path);
      const policy = headers["content-security-policy"] ?? "";
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/]+=*'(;|$)/);
      expect(policy).not.toMatch(/script-src[^;]*unsafe/);
      expect(policy).toContain("object-src 'none'");
      expect(headers["x-content-type-options"]).toBe("nosniff");
      expect(headers["referrer-policy"]).toBe("no-referrer");
      expect(headers["x-frame-options"]).toBe("DENY");
    }
  });

  it("hands Next.js the page's policy, with a fresh nonce per request, whatever the client sent", async () => {
    const first = await get("/", { "content-security-policy": "script-src 'nonce-chosen-by-client'" });
    const second = await get("/");
    expect(first.body).toBe(`next / ${String(first.headers["content-security-policy"])}`);
    expect(first.body).not.toContain("chosen-by-client");
    expect(first.headers["content-security-policy"]).not.toBe(second.headers["content-security-policy"]);
  });

  it("sends a browser that came in clear to https://, and refuses API calls and upgrades made in clear", async () => {
    const page = await plain("/vms?ns=default");
    expect(page.status).toBe(308);
    expect(page.headers.location).toBe(`https://127.0.0.1:${String(port(gateway.server))}/vms?ns=default`);
    const call = await plain("/trpc/vms.create", "POST");
    expect(call.status).toBe(400);
    expect(call.body).toContain("HTTPS only");
    const upgrade = request({
      host: "127.0.0.1",
      port: port(gateway.server),
      path: "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm/console",
      headers: { connection: "Upgrade", upgrade: "websocket" },
    });
    upgrade.end();
    const [refused] = (await once(upgrade, "response")) as [IncomingMessage];
    expect(refused.statusCode).toBe(400);
    refused.resume();
  });
});
