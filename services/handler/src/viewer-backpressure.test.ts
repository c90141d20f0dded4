import { once } from "node:events";
import { type AddressInfo, type Server, type Socket, connect, createServer } from "node:net";
import { type PipeBounds, SLOW_PEER_CLOSE_CODE } from "@kubevirt-ts/runtime";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { limits } from "./limits.ts";
import { SharedConsole, pipeToViewer } from "./shared-console.ts";

// What the handler holds for a viewer that stops reading, with real sockets:
// a TCP server stands where QEMU's socket is and writes as fast as its own
// socket takes (its output paced where it says), real websockets carry it to
// viewers, and one viewer pauses its socket as the measured attack did.

const CHUNK = 64 * 1024;
const servers: (Server | WebSocketServer)[] = [];
const sockets: { destroy(): void }[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) server.close();
});
afterAll(() => {
  for (const server of servers) server.close();
});

/**
 * QEMU's socket: writes CHUNK-byte chunks to each client, every `everyMs` (0: as fast as its socket takes them); keeps
 * what each sends unread while `reading` is false.
 */
async function qemu(options: { everyMs: number; reading: boolean }): Promise<{ port: number; received: () => number }> {
  let received = 0;
  const server = createServer((c) => {
    sockets.push(c);
    c.on("error", () => {
      /* the handler's side went away */
    });
    if (options.reading)
      c.on("data", (d: Buffer) => {
        received += d.length;
      });
    else c.pause();
    const write = () => {
      if (c.destroyed) return;
      if (!c.write(Buffer.alloc(CHUNK, 0x41))) c.once("drain", write);
      else if (options.everyMs > 0) setTimeout(write, options.everyMs);
      else setImmediate(write);
    };
    write();
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { port: (server.address() as AddressInfo).port, received: () => received };
}

/**
 * A websocket server whose every connection is given to `take`; resolves with a way to open a viewer (the client, and
 * the server's side of it).
 */
async function viewers(
  take: (ws: WebSocket) => void,
): Promise<() => Promise<{ client: WebSocket; served: WebSocket }>> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
  servers.push(server);
  const served: WebSocket[] = [];
  server.on("connection", (ws) => {
    served.push(ws);
    take(ws);
  });
  await once(server, "listening");
  return async () => {
    const client = new WebSocket(`ws://127.0.0.1:${String((server.address() as AddressInfo).port)}`, {
      perMessageDeflate: false,
    });
    sockets.push({
      destroy: () => {
        client.terminate();
      },
    });
    await once(client, "open");
    while (served.length === 0 || served.at(-1)?.readyState !== WebSocket.OPEN)
      await new Promise((resolve) => setTimeout(resolve, 5));
    const last = served.at(-1);
    if (!last) throw new Error("no viewer was served");
    return { client, served: last };
  };
}

async function connected(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  await once(socket, "connect");
  return socket;
}

/** Counts the bytes a viewer receives. */
function counter(ws: WebSocket): () => number {
  let bytes = 0;
  ws.on("message", (data: Buffer) => {
    bytes += data.length;
  });
  return () => bytes;
}

/** The most a websocket held unsent, sampled until it left the OPEN state; resolves with it and when that was. */
function watchUntilCut(ws: WebSocket): Promise<{ most: number; cutAt: number }> {
  return new Promise((resolve) => {
    let most = 0;
    const timer = setInterval(() => {
      most = Math.max(most, ws.bufferedAmount);
      if (ws.readyState !== ws.OPEN) {
        clearInterval(timer);
        resolve({ most, cutAt: Date.now() });
      }
    }, 5);
  });
}

/** Whether a viewer is still sent bytes: more within 200 ms. */
async function stillReceiving(bytes: () => number): Promise<boolean> {
  const before = bytes();
  await new Promise((resolve) => setTimeout(resolve, 200));
  return bytes() > before;
}

/** A paused viewer reads again: resolves with the close code and reason it gets after what was held for it. */
async function readsAgain(client: WebSocket): Promise<[number, string]> {
  const closed = once(client, "close");
  client.resume();
  const [code, reason] = (await closed) as [number, Buffer];
  return [code, reason.toString()];
}

describe("a viewer that stops reading", { timeout: 30_000 }, () => {
  it(
    "pauses only its own connection to QEMU, holds at most the bound, and is cut off with 1013 " +
      "past the stall bound while another viewer goes on",
    async () => {
      const bounds: PipeBounds = {
        highBytes: 256 * 1024,
        lowBytes: 64 * 1024,
        maxBytes: 1024 * 1024,
        stallMs: 1_500,
        closeGraceMs: 10_000,
      };
      const { port } = await qemu({ everyMs: 0, reading: true });
      const open = await viewers((ws) => {
        void connected(port).then((unix) => {
          pipeToViewer(unix, ws, bounds);
        });
      });
      const fast = await open();
      const slow = await open();
      const fastBytes = counter(fast.client);
      slow.client.pause();
      const pausedAt = Date.now();
      const fastBefore = fastBytes();
      const { most, cutAt } = await watchUntilCut(slow.served);
      expect(most).toBeGreaterThan(bounds.highBytes);
      expect(most).toBeLessThanOrEqual(bounds.maxBytes);
      expect(cutAt - pausedAt).toBeGreaterThanOrEqual(bounds.stallMs);
      expect(cutAt - pausedAt).toBeLessThan(bounds.stallMs + 3_000);
      // The other viewer was sent tens of MiB meanwhile, and still is.
      expect(fastBytes() - fastBefore).toBeGreaterThan(8 * 1024 * 1024);
      expect(await stillReceiving(fastBytes)).toBe(true);
      // Within the grace the slow viewer reads again: what was held for it, then why it was cut off.
      expect(await readsAgain(slow.client)).toEqual([
        SLOW_PEER_CLOSE_CODE,
        "this viewer read nothing for 2 s: its session ended",
      ]);
    },
  );

  it("of a shared serial console is cut off once it falls behind, and the other viewers go on", async () => {
    // A console that writes 12.8 MB/s: a viewer that reads keeps up, one that stops is 4 MiB behind within a second.
    const { port } = await qemu({ everyMs: 5, reading: true });
    const unix = await connected(port);
    const group = new SharedConsole(unix, () => {
      /* the test ends the group */
    });
    const open = await viewers((ws) => {
      group.join(ws, `viewer-${String(group.size)}`);
    });
    const fast = await open();
    const slow = await open();
    const fastBytes = counter(fast.client);
    slow.client.pause();
    const pausedAt = Date.now();
    const { most, cutAt } = await watchUntilCut(slow.served);
    expect(cutAt - pausedAt).toBeLessThan(5_000);
    expect(most).toBeLessThanOrEqual(limits.sharedConsoleBehindBytes + CHUNK);
    expect(fast.served.readyState).toBe(WebSocket.OPEN);
    expect(await stillReceiving(fastBytes)).toBe(true);
    expect(await readsAgain(slow.client)).toEqual([
      SLOW_PEER_CLOSE_CODE,
      "this viewer could not keep up with the console's output",
    ]);
    group.close("the test is over");
  });

  it(
    "holding the keyboard of a guest that reads no input is paused: the handler " +
      "holds a frame or so of it, not all it sends",
    async () => {
      const { port, received } = await qemu({ everyMs: 1_000, reading: false });
      const unix = await connected(port);
      const group = new SharedConsole(unix, () => {
        /* the test ends the group */
      });
      const open = await viewers((ws) => {
        group.join(ws, "holder");
      });
      const holder = await open();
      let most = 0;
      let sent = 0;
      // The holder types 32 MiB as fast as its own socket takes it; its client keeps at most 1 MiB of its own unsent.
      const until = Date.now() + 3_000;
      while (Date.now() < until && sent < 32 * 1024 * 1024) {
        if (holder.client.bufferedAmount < 1024 * 1024) {
          holder.client.send(Buffer.alloc(CHUNK, 0x61));
          sent += CHUNK;
        }
        most = Math.max(most, unix.writableLength);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      expect(received()).toBe(0);
      // What the kernel's socket buffers take, the rest waits in the holder's client: far less than what it sent.
      expect(sent).toBeGreaterThan(4 * 1024 * 1024);
      expect(most).toBeLessThanOrEqual(unix.writableHighWaterMark + 2 * CHUNK);
      expect(holder.served.isPaused).toBe(true);
      group.close("the test is over");
    },
  );
});
