import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeClient } from "./trpc";

// What the dashboard's client puts on the wire, read by a real HTTP server:
// the token travels in the Authorization header, subscriptions included,
// and never in a URL.

let server: Server;
let base = "";
const requests: { url: string; authorization: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push({ url: req.url ?? "", authorization: req.headers.authorization });
    server.emit("recorded", req, res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln";

describe("the dashboard's tRPC client", () => {
  it("opens a subscription's stream with the token in the Authorization header, not in the URL", async () => {
    const recorded = once(server, "recorded") as Promise<[IncomingMessage, ServerResponse]>;
    const subscription = makeClient(token, base).vms.watch.subscribe({ namespace: "ns" }, {});
    const [req, res] = await recorded;
    expect(req.headers.authorization).toBe(`Bearer ${token}`);
    expect(req.headers.accept).toBe("text/event-stream");
    expect(decodeURIComponent(req.url ?? "")).toBe('/trpc/vms.watch?input={"namespace":"ns"}');
    subscription.unsubscribe();
    res.end();
  });

  it("sends queries with the token in the Authorization header", async () => {
    const recorded = once(server, "recorded") as Promise<[IncomingMessage, ServerResponse]>;
    const query = makeClient(token, base)
      .whoami.query()
      .catch(() => undefined);
    const [req, res] = await recorded;
    expect(req.headers.authorization).toBe(`Bearer ${token}`);
    res.writeHead(500).end();
    await query;
  });

  it("never put the token in any URL it asked for", () => {
    expect(requests.length).toBeGreaterThanOrEqual(2);
    for (const request of requests) expect(decodeURIComponent(request.url)).not.toContain(token);
  });
});
