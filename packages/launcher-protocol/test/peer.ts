import { mkdtemp, rm } from "node:fs/promises";
import { type Server, type Socket, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A launcher stand-in for tests of the protocol's parsing: a real unix
// socket whose far end the test scripts, byte by byte.

export interface Peer {
  path: string;
  /** The connections accepted so far, in order. */
  connections: Socket[];
  close(): Promise<void>;
}

export async function startPeer(onConnection: (socket: Socket) => void): Promise<Peer> {
  const dir = await mkdtemp(join(tmpdir(), "launcher-peer-"));
  const path = join(dir, "launcher.sock");
  const connections: Socket[] = [];
  const server: Server = createServer((socket) => {
    connections.push(socket);
    socket.on("error", () => socket.destroy());
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    path,
    connections,
    close: async () => {
      for (const socket of connections) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A peer that first answers the client's `hello` as a launcher of this release (version 2), then is `onConnection`'s:
 * the client sends nothing more before that answer, so the first line is the hello.
 */
export function greeting(onConnection: (socket: Socket) => void, version = 2): (socket: Socket) => void {
  return (socket) => {
    let received = "";
    const hello = (chunk: Buffer) => {
      received += chunk.toString("utf8");
      const newline = received.indexOf("\n");
      if (newline < 0) return;
      socket.off("data", hello);
      const { id } = JSON.parse(received.slice(0, newline)) as { id: number };
      socket.write(`${JSON.stringify({ id, result: { version } })}\n`);
      onConnection(socket);
    };
    socket.on("data", hello);
  };
}

/** Calls back with each request line the peer receives, parsed. */
export function onRequests(
  socket: Socket,
  handle: (request: { version?: number; id: number; method: string; params?: unknown }) => void,
): void {
  let buffer = "";
  socket.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf("\n");
    while (newline >= 0) {
      handle(JSON.parse(buffer.slice(0, newline)) as { id: number; method: string });
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf("\n");
    }
  });
}

/** mulberry32: a small seeded PRNG, so that a failing case can be run again from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomBytes(random: () => number, length: number, without?: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    let byte = Math.floor(random() * 256);
    if (byte === without) byte = (byte + 1) % 256;
    bytes[i] = byte;
  }
  return bytes;
}

/** Writes the data in pieces of random sizes, as a stream may deliver it. */
export async function writeFragmented(socket: Socket, data: Buffer, random: () => number): Promise<void> {
  let offset = 0;
  while (offset < data.length && !socket.destroyed) {
    const size = 1 + Math.floor(random() * Math.min(4096, data.length - offset));
    socket.write(data.subarray(offset, offset + size));
    offset += size;
    if (random() < 0.2) await new Promise((resolve) => setImmediate(resolve));
  }
}
