import { inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { isPng, parsePpm, toPng } from "./png.ts";

// A 2×2 PPM: red, green / blue, white, with a comment in its header.
const ppm = Buffer.concat([
  Buffer.from("P6\n# QEMU\n2 2\n255\n"),
  Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255]),
]);

describe("screenshots as PNG", () => {
  it("encodes a PPM as an RGB PNG whose rows hold the same pixels", () => {
    const png = toPng(ppm);
    expect(isPng(png)).toBe(true);
    expect(png.toString("ascii", 12, 16)).toBe("IHDR");
    expect([png.readUInt32BE(16), png.readUInt32BE(20), png[24], png[25]]).toEqual([2, 2, 8, 2]);
    const idatLength = png.readUInt32BE(33);
    expect(png.toString("ascii", 37, 41)).toBe("IDAT");
    const rows = inflateSync(png.subarray(41, 41 + idatLength));
    expect([...rows]).toEqual([0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255]);
    expect(png.subarray(-8, -4).toString("ascii")).toBe("IEND");
  });

  it("keeps a PNG as it is, and refuses what is neither", () => {
    const png = toPng(ppm);
    expect(toPng(png)).toBe(png);
    expect(() => toPng(Buffer.from("P3\n2 2\n255\n"))).toThrow("neither PNG nor an 8-bit P6 PPM");
    expect(() => parsePpm(Buffer.concat([Buffer.from("P6 2 2 255\n"), Buffer.alloc(5)]))).toThrow("cut short");
  });
});
