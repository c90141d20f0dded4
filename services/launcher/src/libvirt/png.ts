import { crc32, deflateSync } from "node:zlib";

// A screenshot as PNG, whatever QEMU wrote: QEMU's screendump writes PNG when
// libvirt asks for it and PPM (P6, 8 bits per channel) otherwise; a PPM is
// encoded here as an RGB PNG (PNG's filter 0 on each row, zlib-deflated).

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export const isPng = (image: Buffer): boolean => image.subarray(0, 8).equals(PNG_SIGNATURE);

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A binary PPM's width, height and pixels; throws when the image is no P6 PPM of 8-bit channels. */
export function parsePpm(image: Buffer): { width: number; height: number; pixels: Buffer } {
  // The header: "P6", width, height, maxval, each after whitespace (comments start with #), then one whitespace byte.
  const fields: string[] = [];
  let at = 0;
  while (fields.length < 4) {
    while (at < image.length && /\s/.test(String.fromCharCode(image[at] ?? 0))) at++;
    if (image[at] === 0x23) {
      while (at < image.length && image[at] !== 0x0a) at++;
      continue;
    }
    const start = at;
    while (at < image.length && !/\s/.test(String.fromCharCode(image[at] ?? 0))) at++;
    if (start === at) throw new Error("the screenshot is neither PNG nor a complete PPM header");
    fields.push(image.toString("ascii", start, at));
  }
  const [magic, w, h, max] = fields;
  const width = Number(w);
  const height = Number(h);
  if (
    magic !== "P6" ||
    max !== "255" ||
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width <= 0 ||
    height <= 0
  ) {
    throw new Error(`the screenshot is neither PNG nor an 8-bit P6 PPM (header ${fields.join(" ")})`);
  }
  const pixels = image.subarray(at + 1, at + 1 + width * height * 3);
  if (pixels.length !== width * height * 3)
    throw new Error(
      `the screenshot's PPM is cut short: ${String(pixels.length)} of ${String(width * height * 3)} bytes`,
    );
  return { width, height, pixels };
}

/** The screenshot as PNG: kept when it is one, converted when it is a PPM. */
export function toPng(image: Buffer): Buffer {
  if (isPng(image)) return image;
  const { width, height, pixels } = parsePpm(image);
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let row = 0; row < height; row++) pixels.copy(raw, row * (stride + 1) + 1, row * stride, (row + 1) * stride);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits per channel, RGB, deflate, filter method 0, no interlace
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
