import { describe, expect, it } from "vitest";
import { MAX_CLIENT_CUT_TEXT_BYTES, RfbInputFilter, RfbProtocolError } from "./rfb-input.ts";

const VERSION = Buffer.from("RFB 003.008\n", "latin1");
const key = (down: number, keysym: number) =>
  Buffer.from([4, down, 0, 0, (keysym >>> 24) & 0xff, (keysym >>> 16) & 0xff, (keysym >>> 8) & 0xff, keysym & 0xff]);
const pointer = Buffer.from([5, 1, 0, 10, 0, 20]);
const updateRequest = Buffer.from([3, 1, 0, 0, 0, 0, 4, 0, 3, 0]);
const setEncodings = Buffer.from([2, 0, 0, 2, 0, 0, 0, 7, 0xff, 0xff, 0xfe, 0xfe]);
const qemuKey = Buffer.from([255, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 0x1e]);
const cutText = Buffer.concat([Buffer.from([6, 0, 0, 0, 0, 0, 0, 3]), Buffer.from("abc")]);
const extendedCutText = Buffer.concat([Buffer.from([6, 0, 0, 0, 0xff, 0xff, 0xff, 0xfc]), Buffer.from([0, 0, 0, 1])]);
const fence = Buffer.from([248, 0, 0, 0, 0, 0, 0, 1, 2, 9, 9]);
const desktopSize = Buffer.concat([Buffer.from([251, 0, 4, 0, 3, 0, 1, 0]), Buffer.alloc(16)]);
const pixelFormat = Buffer.concat([Buffer.from([0, 0, 0, 0]), Buffer.alloc(16)]);

/** A viewer through the handshake (RFB 3.8, no security, not shared). */
function handshaken(): { filter: RfbInputFilter; passed: Buffer } {
  const filter = new RfbInputFilter();
  const passed = filter.push(Buffer.concat([VERSION, Buffer.from([1]), Buffer.from([0])]), false);
  return { filter, passed };
}

describe("RfbInputFilter", () => {
  it("passes the handshake, but asks to share the display whatever the viewer's ClientInit said", () => {
    const { passed } = handshaken();
    expect(passed).toEqual(Buffer.concat([VERSION, Buffer.from([1, 1])]));
  });

  it("follows RFB 3.3, where the server chooses the security type, and VNC authentication's 16-byte answer", () => {
    const old = new RfbInputFilter();
    expect(old.push(Buffer.concat([Buffer.from("RFB 003.003\n"), Buffer.from([0])]), true)).toEqual(
      Buffer.concat([Buffer.from("RFB 003.003\n"), Buffer.from([1])]),
    );
    const auth = new RfbInputFilter();
    const answer = Buffer.alloc(16, 0x5a);
    const passed = auth.push(Buffer.concat([VERSION, Buffer.from([2]), answer, Buffer.from([0]), key(1, 0x61)]), false);
    expect(passed).toEqual(Buffer.concat([VERSION, Buffer.from([2]), answer, Buffer.from([1])]));
  });

  it("keeps every kind of input of a viewer without the keyboard from the guest, and passes the rest", () => {
    const { filter } = handshaken();
    const all = [
      pixelFormat,
      setEncodings,
      updateRequest,
      key(1, 0x61),
      pointer,
      qemuKey,
      cutText,
      extendedCutText,
      fence,
      desktopSize,
      Buffer.from([250, 0, 1, 4]),
    ];
    expect(filter.push(Buffer.concat(all), false)).toEqual(
      Buffer.concat([pixelFormat, setEncodings, updateRequest, fence]),
    );
  });

  it("passes the holder's input as it came", () => {
    const { filter } = handshaken();
    const all = Buffer.concat([updateRequest, key(1, 0x61), key(0, 0x61), pointer, qemuKey, cutText]);
    expect(filter.push(all, true)).toEqual(all);
  });

  it("holds a message cut across chunks until it is whole, and judges it by who holds the keyboard when it is", () => {
    const { filter } = handshaken();
    const bytes = Buffer.concat([updateRequest, qemuKey, updateRequest]);
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 5) out.push(filter.push(bytes.subarray(at, at + 5), at >= 15));
    expect(Buffer.concat(out)).toEqual(bytes);
    const watcher = handshaken().filter;
    const cut: Buffer[] = [];
    for (const byte of bytes) cut.push(watcher.push(Buffer.from([byte]), false));
    expect(Buffer.concat(cut)).toEqual(Buffer.concat([updateRequest, updateRequest]));
  });

  it(
    "ends a viewer whose bytes it cannot cut: no RFB version, a security type " +
      "it cannot follow, an unknown message",
    () => {
      expect(() => new RfbInputFilter().push(Buffer.from("GET / HTTP/1.1\r\n"), true)).toThrow(RfbProtocolError);
      expect(() => new RfbInputFilter().push(Buffer.concat([VERSION, Buffer.from([19])]), true)).toThrow(
        /security type 19/,
      );
      expect(() => handshaken().filter.push(Buffer.from([7, 0, 0, 0]), true)).toThrow(/message type 7/);
      expect(() => handshaken().filter.push(Buffer.from([255, 9, 0, 0]), true)).toThrow(/subtype 9/);
    },
  );

  it(
    "takes a clipboard of up to QEMU's 1 MiB, joined once however small its chunks, " +
      "and refuses a longer one from its header",
    () => {
      const text = Buffer.alloc(MAX_CLIENT_CUT_TEXT_BYTES, 0x61);
      const header = Buffer.from([6, 0, 0, 0, 0, 0, 0, 0]);
      header.writeInt32BE(MAX_CLIENT_CUT_TEXT_BYTES, 4);
      const { filter } = handshaken();
      const message = Buffer.concat([header, text]);
      const started = performance.now();
      const out: Buffer[] = [];
      // 64-byte chunks: joining what is held to each of them would copy 8 GiB.
      for (let at = 0; at < message.length; at += 64) out.push(filter.push(message.subarray(at, at + 64), true));
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(Buffer.concat(out).equals(message)).toBe(true);
      expect(filter.push(updateRequest, true)).toEqual(updateRequest);

      const over = (length: number) => {
        const bytes = Buffer.from([6, 0, 0, 0, 0, 0, 0, 0]);
        bytes.writeInt32BE(length, 4);
        return bytes;
      };
      // Refused from the 8 bytes of its header: nothing of the 2 GiB it announces is held.
      expect(() => handshaken().filter.push(over(0x7fffffff), true)).toThrow(
        /ClientCutText of 2147483647 bytes is over the 1048576 allowed/,
      );
      expect(() => handshaken().filter.push(over(MAX_CLIENT_CUT_TEXT_BYTES + 1), false)).toThrow(RfbProtocolError);
      // The extended clipboard's negated length, at its extreme, and one too short for its flags.
      expect(() => handshaken().filter.push(over(-0x80000000), true)).toThrow(/ClientCutText of 2147483648 bytes/);
      expect(() => handshaken().filter.push(over(-2), true)).toThrow(/needs at least its 4 bytes of flags/);
    },
  );
});
