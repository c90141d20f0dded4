import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { WebSocket } from "ws";
import { openConsole } from "../console.ts";
import { until } from "./victim.ts";

// A VNC client of the attacker's own: the RFB 3.8 handshake (RFC 6143 §7.1,
// security None) over the VMI's vnc websocket, then raw client messages.

export interface RfbClient {
  ws: WebSocket;
  width: number;
  height: number;
  /** Whether the server has ended the session (the client never closes it first). */
  ended: () => boolean;
  /** Waits at most the timeout for the session's end; whether it ended. */
  endsWithin: (ms: number) => Promise<boolean>;
}

export async function rfbClient(namespace: string, vm: string, token: string, shared: boolean): Promise<RfbClient> {
  const { ws, received } = await openConsole(namespace, vm, "vnc", { token }, { shared });
  const session = { ended: false };
  const end = once(ws, "close").then(
    () => {
      session.ended = true;
    },
    () => {
      session.ended = true;
    },
  );
  const bytes = (n: number, what: string) =>
    until(() => Promise.resolve(received().length >= n || session.ended), 30_000, `no ${what} from the VNC server`, 50);
  await bytes(12, "protocol version");
  const version = received().subarray(0, 12).toString("latin1");
  if (version !== "RFB 003.008\n") throw new Error(`the VNC server speaks ${JSON.stringify(version)}, not RFB 3.8`);
  ws.send(Buffer.from(version, "latin1"));
  await bytes(13, "security types");
  const count = received()[12] ?? 0;
  await bytes(13 + count, "security types");
  if (
    !received()
      .subarray(13, 13 + count)
      .includes(1)
  )
    throw new Error("the VNC server offers no security type None");
  ws.send(Buffer.from([1]));
  const result = 13 + count;
  await bytes(result + 4, "security result");
  if (received().readUInt32BE(result) !== 0) throw new Error("the VNC server refused security type None");
  // ClientInit: share the display.
  ws.send(Buffer.from([1]));
  const init = result + 4;
  await bytes(init + 24, "ServerInit");
  await bytes(init + 24 + received().readUInt32BE(init + 20), "ServerInit's name");
  if (session.ended) throw new Error("the VNC server ended the session during the handshake");
  return {
    ws,
    width: received().readUInt16BE(init),
    height: received().readUInt16BE(init + 2),
    ended: () => session.ended,
    endsWithin: async (ms) => {
      await Promise.race([end, sleep(ms)]);
      return session.ended;
    },
  };
}

/** SetEncodings with Raw alone: every update is the whole rectangle, uncompressed. */
export const rawEncoding = (): Buffer => Buffer.from([2, 0, 0, 1, 0, 0, 0, 0]);

/** A non-incremental FramebufferUpdateRequest for the whole display. */
export function fullUpdateRequest(width: number, height: number): Buffer {
  const message = Buffer.alloc(10);
  message.writeUInt8(3, 0);
  message.writeUInt8(0, 1);
  message.writeUInt16BE(width, 6);
  message.writeUInt16BE(height, 8);
  return message;
}

/** The header of a ClientCutText announcing `length` bytes of text. */
export function cutTextHeader(length: number): Buffer {
  const message = Buffer.alloc(8);
  message.writeUInt8(6, 0);
  message.writeUInt32BE(length, 4);
  return message;
}
