import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { type AddressInfo, type Server, connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { MAX_CLIENT_CUT_TEXT_BYTES } from "./rfb-input.ts";
import { SharedDisplay } from "./shared-console.ts";

// A shared display over real sockets: a unix socket plays QEMU's VNC server (it records what each connection got),
// viewers are websockets through a ws server, joined as the console server joins them.

let dir: string;
let qemu: Server;
const got: Buffer[][] = [];
let wss: WebSocketServer;
let display: SharedDisplay;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "shared-display-"));
  got.length = 0;
  qemu = createServer((c) => {
    const bytes: Buffer[] = [];
    got.push(bytes);
    c.write("RFB 003.008\n");
    c.on("data", (d: Buffer) => bytes.push(d));
  });
  qemu.listen(join(dir, "vnc.sock"));
  await once(qemu, "listening");
  display = new SharedDisplay(() => undefined);
  wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  wss.on("connection", (ws, req) => {
    display.join(ws, new URL(req.url ?? "/", "http://x").searchParams.get("who") ?? "", connect(join(dir, "vnc.sock")));
  });
  await once(wss, "listening");
});

afterEach(async () => {
  display.close("the test ended");
  await new Promise((resolve) => {
    wss.close(resolve);
  });
  await new Promise((resolve) => {
    qemu.close(resolve);
  });
  await rm(dir, { recursive: true, force: true });
});

async function viewer(who: string): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${String((wss.address() as AddressInfo).port)}/?who=${who}`);
  await once(ws, "open");
  return ws;
}

const handshake = Buffer.from("RFB 003.008\n\x01\x00", "latin1");
const key = (keysym: number) => Buffer.from([4, 1, 0, 0, 0, 0, 0, keysym]);

describe("a shared display's viewer with an oversized clipboard", () => {
  it("ends that viewer's session when its clipboard announces more than QEMU's 1 MiB, and no other", async () => {
    const alice = await viewer("alice");
    const mallory = await viewer("mallory");
    await vi.waitFor(() => {
      expect(got).toHaveLength(2);
    });
    alice.send(handshake);
    mallory.send(handshake);
    const cut = Buffer.from([6, 0, 0, 0, 0, 0, 0, 0]);
    cut.writeInt32BE(0x7fffffff, 4);
    const closed = once(mallory, "close") as Promise<[number, Buffer]>;
    mallory.send(Buffer.concat([cut, Buffer.alloc(64 * 1024)]));
    const [code, reason] = await closed;
    expect([code, reason.toString()]).toEqual([
      1008,
      "the display could not be shared: ClientCutText of 2147483647 bytes is over " +
        `the ${String(MAX_CLIENT_CUT_TEXT_BYTES)} allowed`.slice(0, 120),
    ]);
    // Alice, who holds the keyboard, still reaches QEMU.
    alice.send(key(0x61));
    await vi.waitFor(() => {
      expect(Buffer.concat(got[0] ?? []).subarray(-8)).toEqual(key(0x61));
    });
    // Nothing of mallory's clipboard reached QEMU.
    expect(Buffer.concat(got[1] ?? [])).toEqual(Buffer.concat([handshake.subarray(0, 13), Buffer.from([1])]));
    alice.close();
  });
});
