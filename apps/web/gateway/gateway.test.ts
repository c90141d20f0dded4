import { once } from "node:events";
import { type IncomingMessage, type Server, createServer, request } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "./gateway.ts";

// The gateway with two real servers behind it, standing where Next.js and
// virt-api would: plain requests, a streamed response, and a websocket-style
// upgrade must each reach the right one.

let next: Server;
let api: Server;
let gateway: Server;
const port = (server: Server) => (server.address() as AddressInfo).port;

async function listen(server: Server): Promise<Server> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

beforeAll(async () => {
  next = await listen(createServer((req, res) => res.end(`next ${req.url ?? ""}`)));
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
  api.on("upgrade", (req, socket) => {
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: ${String(req.headers["sec-websocket-protocol"])}\r\n\r\n`);
    socket.on("data", (chunk: Buffer) => socket.write(chunk.toString().toUpperCase()));
  });
  gateway = startGateway({ port: 0, host: "127.0.0.1", next: new URL(`http://127.0.0.1:${String(port(next))}`), api: new URL(`http://127.0.0.1:${String(port(api))}`) });
  await once(gateway, "listening");
});

afterAll(() => {
  for (const server of [gateway, next, api]) {
    server.closeAllConnections();
    server.close();
  }
});

function get(path: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port: port(gateway), path, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => { resolve(body); });
    }).on("error", reject).end();
  });
}

describe("the dashboard's gateway", () => {
  it("sends pages to Next.js and /trpc/ to the API, headers and all", async () => {
    expect(await get("/vms?ns=default")).toBe("next /vms?ns=default");
    expect(await get("/trpc/whoami", { authorization: "Bearer t0ken" })).toBe("api /trpc/whoami Bearer t0ken");
  });

  it("streams the API's server-sent events through", async () => {
    expect(await get("/trpc/stream")).toBe("data: one\n\ndata: two\n\n");
  });

  it("tunnels a console's upgrade to the API, both ways", async () => {
    const req = request({
      host: "127.0.0.1",
      port: port(gateway),
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
});
