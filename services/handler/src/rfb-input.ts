// What a VNC viewer sends QEMU, cut into the RFB protocol's messages
// (RFC 6143, with the extensions noVNC and QEMU speak), so that a shared
// display can keep the input of anyone who does not hold the keyboard from
// the guest: keys, the pointer, the clipboard, resizing and power requests.
// The handshake passes as it is, except that every viewer's ClientInit asks
// to share the display: a viewer could otherwise ask QEMU for it alone and
// cut the others off. A message this framer does not know cannot be cut
// safely, so it ends the viewer's session.

import { limits } from "./limits.ts";

/** The client-to-server messages by type (RFC 6143 §7.5, and the registered extensions QEMU and noVNC use). */
const MessageType = {
  SetPixelFormat: 0,
  SetEncodings: 2,
  FramebufferUpdateRequest: 3,
  KeyEvent: 4,
  PointerEvent: 5,
  ClientCutText: 6,
  EnableContinuousUpdates: 150,
  ClientFence: 248,
  Xvp: 250,
  SetDesktopSize: 251,
  Qemu: 255,
} as const;

/** QEMU's client messages (type 255) by subtype: the extended key event, and audio. */
const QemuSubtype = { ExtendedKeyEvent: 0, Audio: 1 } as const;

/**
 * Security types a viewer may choose on a shared display: none, and VNC's challenge (its 16-byte answer is skipped).
 */
const SecurityType = { None: 1, VncAuthentication: 2 } as const;

/** The RFB protocol version's 12 bytes, "RFB 003.008\n". */
const VERSION_BYTES = 12;

/** The longest clipboard a viewer may send: limits.clientCutTextBytes. */
export const MAX_CLIENT_CUT_TEXT_BYTES = limits.clientCutTextBytes;

export class RfbProtocolError extends Error {}

type Stage = "version" | "security" | "vnc-auth" | "client-init" | "messages";

/**
 * The length of the message at the start of `buf` and whether it is input (`whole` once `buf` holds all of it), or
 * undefined while its header is not in yet.
 */
function frame(buf: Buffer): { length: number; input: boolean; whole: boolean } | undefined {
  const type = buf[0];
  const need = (length: number, input: boolean) => ({ length, input, whole: buf.length >= length });
  switch (type) {
    case MessageType.SetPixelFormat:
      return need(20, false);
    case MessageType.FramebufferUpdateRequest:
      return need(10, false);
    case MessageType.EnableContinuousUpdates:
      return need(10, false);
    case MessageType.KeyEvent:
      return need(8, true);
    case MessageType.PointerEvent:
      return need(6, true);
    case MessageType.Xvp:
      return need(4, true);
    case MessageType.SetEncodings:
      return buf.length < 4 ? undefined : need(4 + 4 * buf.readUInt16BE(2), false);
    case MessageType.ClientCutText: {
      if (buf.length < 8) return undefined;
      // The extended clipboard sends its length negated; its payload starts with 4 bytes of flags.
      const signed = buf.readInt32BE(4);
      const length = Math.abs(signed);
      if (length > MAX_CLIENT_CUT_TEXT_BYTES)
        throw new RfbProtocolError(
          `ClientCutText of ${String(length)} bytes is over the ${String(MAX_CLIENT_CUT_TEXT_BYTES)} allowed`,
        );
      if (signed < 0 && length < 4)
        throw new RfbProtocolError("an extended ClientCutText needs at least its 4 bytes of flags");
      return need(8 + length, true);
    }
    case MessageType.ClientFence:
      return buf.length < 9 ? undefined : need(9 + (buf[8] ?? 0), false);
    case MessageType.SetDesktopSize:
      return buf.length < 8 ? undefined : need(8 + 16 * (buf[6] ?? 0), true);
    case MessageType.Qemu: {
      if (buf.length < 2) return undefined;
      if (buf[1] === QemuSubtype.ExtendedKeyEvent) return need(12, true);
      if (buf[1] === QemuSubtype.Audio) {
        if (buf.length < 4) return undefined;
        // Enable and disable are 4 bytes; set-format adds format, channels and frequency.
        return need(buf.readUInt16BE(2) === 2 ? 10 : 4, false);
      }
      throw new RfbProtocolError(`unknown QEMU client message subtype ${String(buf[1])}`);
    }
    default:
      throw new RfbProtocolError(`unknown RFB client message type ${String(type)}`);
  }
}

/**
 * One viewer's bytes towards QEMU: push what the viewer sent, with whether it holds the keyboard now, and get what may
 * go on. Bytes of a message not yet whole are held until the rest comes. Throws RfbProtocolError for what it cannot
 * cut.
 */
export class RfbInputFilter {
  private stage: Stage = "version";
  private pending: Buffer = Buffer.alloc(0);
  /**
   * Chunks come since the last look, not yet joined to `pending`: a long message sent in small chunks is joined once.
   */
  private arrived: Buffer[] = [];
  private arrivedBytes = 0;
  /** How many bytes the message at the start of `pending` needs, once its header told; 0 before. */
  private awaiting = 0;

  push(chunk: Buffer, holdsKeyboard: boolean): Buffer {
    this.arrived.push(chunk);
    this.arrivedBytes += chunk.length;
    if (this.pending.length + this.arrivedBytes < this.awaiting) return Buffer.alloc(0);
    this.pending = Buffer.concat([this.pending, ...this.arrived]);
    this.arrived = [];
    this.arrivedBytes = 0;
    this.awaiting = 0;
    const out: Buffer[] = [];
    for (;;) {
      const step = this.next(holdsKeyboard);
      if (!step) break;
      if (step.pass) out.push(step.pass);
    }
    return out.length === 1 ? (out[0] ?? Buffer.alloc(0)) : Buffer.concat(out);
  }

  /** Takes the next whole unit from what is pending: what of it passes, or undefined when more bytes are needed. */
  private next(holdsKeyboard: boolean): { pass: Buffer | undefined } | undefined {
    const buf = this.pending;
    if (buf.length === 0) return undefined;
    switch (this.stage) {
      case "version": {
        if (buf.length < VERSION_BYTES) return undefined;
        const version = /^RFB (\d{3})\.(\d{3})\n$/.exec(buf.subarray(0, VERSION_BYTES).toString("latin1"));
        if (!version) throw new RfbProtocolError("the viewer did not start with an RFB protocol version");
        // RFB 3.3 has the server choose the security type; from 3.7 the viewer sends its choice.
        this.stage = Number(version[2]) >= 7 ? "security" : "client-init";
        return { pass: this.take(VERSION_BYTES) };
      }
      case "security": {
        const type = buf[0];
        if (type === SecurityType.None) this.stage = "client-init";
        else if (type === SecurityType.VncAuthentication) this.stage = "vnc-auth";
        else throw new RfbProtocolError(`security type ${String(type)} cannot be followed on a shared display`);
        return { pass: this.take(1) };
      }
      case "vnc-auth":
        if (buf.length < 16) return undefined;
        this.stage = "client-init";
        return { pass: this.take(16) };
      case "client-init":
        this.take(1);
        this.stage = "messages";
        // Shared, whatever the viewer asked: nobody's viewer disconnects the others.
        return { pass: Buffer.from([1]) };
      case "messages": {
        const message = frame(buf);
        if (!message) return undefined;
        if (!message.whole) {
          this.awaiting = message.length;
          return undefined;
        }
        const bytes = this.take(message.length);
        return { pass: message.input && !holdsKeyboard ? undefined : bytes };
      }
    }
  }

  private take(length: number): Buffer {
    const bytes = this.pending.subarray(0, length);
    this.pending = this.pending.subarray(length);
    return bytes;
  }
}
