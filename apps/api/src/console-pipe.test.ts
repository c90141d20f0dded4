import { once } from "node:events";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger, type PipeBounds, SLOW_PEER_CLOSE_CODE } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { pipeConsole } from "./console-proxy.ts";

// The console proxy's pipe with real websockets over real TCP: a handler that
// floods every session with bytes as fast as it may, the proxy in between,
// and clients of which one stops reading (its socket paused, as the measured
// attack did). The proxy holds at most the hard cap unsent for the slow
// client, cuts it off, and the other session goes on.

const CHUNK = 64 * 1024;
const log = createLogger({ component: "console-pipe-test", level: "error" });

/**
 * The handler: on "flood", sends `frame`-byte frames until the session closes, keeping at most 8 MiB of its own unsent;
 * on "hold", stops reading; echoes "ping" as "pong".
 */
let handler: WebSocketServer;
/**
 * The proxy: each client's websocket joined to a session of its own with the handler; `sessions` has the proxy's side
 * of each client.
 */
let proxy: Server;
const sessions: WebSocket[] = [];
/** The proxy's websocket to the handler, by the proxy's side of the client. */
const handlerSides = new Map<WebSocket, WebSocket>();
let bounds: PipeBounds;

const url = (server: Server | WebSocketServer) => `ws://127.0.0.1:${String((server.address() as AddressInfo).port)}`;

beforeAll(async () => {
  handler = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
  handler.on("connection", (ws, req) => {
    const frame = Number(new URL(req.url ?? "/", "http://h").searchParams.get("frame") ?? CHUNK);
    const flood = () => {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.bufferedAmount < 8 * 1024 * 1024) ws.send(Buffer.alloc(frame, 0x41), { binary: true });
      setImmediate(flood);
    };
    ws.on("message", (data: Buffer) => {
      const text = data.toString();
      if (text === "flood") flood();
      else if (text === "hold") ws.pause();
      else if (text === "ping") ws.send("pong", { binary: false });
    });
  });
  await once(handler, "listening");
  const server = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  proxy = createServer();
  proxy.on("upgrade", (req, socket, head) => {
    server.handleUpgrade(req, socket, head, (client) => {
      sessions.push(client);
      const toHandler = new WebSocket(`${url(handler)}${req.url ?? "/"}`, { perMessageDeflate: false });
      handlerSides.set(client, toHandler);
      toHandler.pause();
      toHandler.on("open", () => {
        pipeConsole(client, toHandler, { log, labels: {}, pingIntervalMs: 60_000, bounds });
      });
    });
  });
  proxy.listen(0, "127.0.0.1");
  await once(proxy, "listening");
});

afterAll(async () => {
  for (const ws of sessions) ws.terminate();
  handler.close();
  await new Promise((resolve) => proxy.close(resolve));
});

/** A client of the proxy, open, and the proxy's side of it. */
async function connect(path = "/"): Promise<{ client: WebSocket; proxied: WebSocket }> {
  const client = new WebSocket(`${url(proxy)}${path}`, { perMessageDeflate: false });
  await once(client, "open");
  await new Promise((resolve) => setTimeout(resolve, 20));
  const proxied = sessions.at(-1);
  if (!proxied) throw new Error("the proxy took no session");
  return { client, proxied };
}

/**
 * Samples the most one of the proxy's websockets held unsent, when the proxy closed it (cut it off) and when its socket
 * closed.
 */
function watchBuffer(socket: WebSocket): Promise<{ most: number; cutAt: number; closedAt: number }> {
  let most = 0;
  let cutAt = 0;
  const timer = setInterval(() => {
    most = Math.max(most, socket.bufferedAmount);
    if (cutAt === 0 && socket.readyState === socket.CLOSING) cutAt = Date.now();
  }, 5);
  return once(socket, "close").then(() => {
    clearInterval(timer);
    return { most, cutAt: cutAt || Date.now(), closedAt: Date.now() };
  });
}

/** Resolves once the proxy has cut a websocket off (closing, its close frame queued). */
async function cutOff(socket: WebSocket): Promise<number> {
  while (socket.readyState === socket.OPEN) await new Promise((resolve) => setTimeout(resolve, 5));
  return Date.now();
}

/** A round trip through the proxy and the handler, in ms. */
async function roundTrip(client: WebSocket): Promise<number> {
  const started = Date.now();
  client.send("ping", { binary: false });
  for (;;) {
    const [data] = (await once(client, "message")) as [Buffer];
    if (data.toString() === "pong") return Date.now() - started;
  }
}

/** A paused client reads again: resolves with the close code and reason it gets after what was held for it. */
async function readsAgain(client: WebSocket): Promise<[number, string]> {
  const closed = once(client, "close");
  client.resume();
  const [code, reason] = (await closed) as [number, Buffer];
  return [code, reason.toString()];
}

describe("the console proxy's pipe", { timeout: 30_000 }, () => {
  it(
    "holds at most the hard cap for a client that stopped reading, cuts it off past the stall " +
      "bound with 1013, and keeps another session going",
    async () => {
      bounds = {
        highBytes: 256 * 1024,
        lowBytes: 64 * 1024,
        maxBytes: 1024 * 1024,
        stallMs: 1_500,
        closeGraceMs: 10_000,
      };
      const other = await connect();
      const slow = await connect();
      const buffered = watchBuffer(slow.proxied);
      slow.client.send("flood", { binary: false });
      slow.client.pause();
      const pausedAt = Date.now();
      // The other session answers while the slow one is flooded.
      const trips: number[] = [];
      while (slow.proxied.readyState === slow.proxied.OPEN) trips.push(await roundTrip(other.client));
      const cutAt = Date.now();
      expect(cutAt - pausedAt).toBeGreaterThanOrEqual(bounds.stallMs);
      expect(cutAt - pausedAt).toBeLessThan(bounds.stallMs + 3_000);
      expect(Math.max(...trips)).toBeLessThan(1_000);
      // Within the grace, the slow client reads again: it gets what was held for it and then why it was cut off.
      expect(await readsAgain(slow.client)).toEqual([
        SLOW_PEER_CLOSE_CODE,
        "The console client read nothing for 2 s: the session ended.",
      ]);
      const { most } = await buffered;
      expect(most).toBeGreaterThan(bounds.highBytes);
      expect(most).toBeLessThanOrEqual(bounds.maxBytes);
      expect(await roundTrip(other.client)).toBeLessThan(1_000);
      other.client.close();
    },
  );

  it(
    "cuts off at once a client that falls behind past the hard cap, and " + "destroys its socket after the grace",
    async () => {
      // Frames bigger than the cap: the first one queued behind a full socket is past it.
      bounds = { highBytes: 64 * 1024, lowBytes: 16 * 1024, maxBytes: 128 * 1024, stallMs: 60_000, closeGraceMs: 500 };
      const slow = await connect(`/?frame=${String(256 * 1024)}`);
      const buffered = watchBuffer(slow.proxied);
      slow.client.send("flood", { binary: false });
      slow.client.pause();
      const pausedAt = Date.now();
      const cutAt = await cutOff(slow.proxied);
      expect(cutAt - pausedAt).toBeLessThan(5_000);
      const { most, closedAt } = await buffered;
      expect(most).toBeLessThanOrEqual(bounds.maxBytes + 256 * 1024);
      expect(closedAt - cutAt).toBeGreaterThanOrEqual(bounds.closeGraceMs - 10);
      expect(closedAt - cutAt).toBeLessThan(bounds.closeGraceMs + 2_000);
      // It read nothing in the grace: its socket was destroyed, with no close frame.
      expect((await readsAgain(slow.client))[0]).toBe(1006);
    },
  );

  it(
    "pauses a client that sends faster than the VM's console takes, and ends " + "its session past the stall bound",
    async () => {
      // The client reads (only the handler stopped): it gets its close frame at once, though the proxy, not reading it,
      // cuts it after the grace.
      bounds = {
        highBytes: 256 * 1024,
        lowBytes: 64 * 1024,
        maxBytes: 1024 * 1024,
        stallMs: 1_500,
        closeGraceMs: 1_000,
      };
      const { client, proxied } = await connect();
      const toHandler = handlerSides.get(proxied);
      if (!toHandler) throw new Error("the session has no handler side");
      client.send("hold", { binary: false });
      const buffered = watchBuffer(toHandler);
      const closed = once(client, "close");
      // The client sends as fast as its own socket takes it, until the session ends.
      while (client.readyState === client.OPEN) {
        if (client.bufferedAmount < 1024 * 1024) client.send(Buffer.alloc(CHUNK));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const { most } = await buffered;
      expect(most).toBeGreaterThan(bounds.highBytes);
      expect(most).toBeLessThanOrEqual(bounds.maxBytes);
      const [code, reason] = (await closed) as [number, Buffer];
      expect(code).toBe(SLOW_PEER_CLOSE_CODE);
      expect(reason.toString()).toBe("The VM's console read nothing for 2 s: the session ended.");
    },
  );
});
