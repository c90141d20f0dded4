import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

// Disk images for the importer's tests, made with the real qemu-img.

const MIB = 1024 * 1024;

export const qemuImg = (...args: string[]): string => execFileSync("qemu-img", args, { encoding: "utf8" });

/** What qemu-img says of an image: its format and virtual size. */
export const imageInfo = (path: string) =>
  JSON.parse(qemuImg("info", "--output=json", path)) as { "virtual-size": number; format: string };

/** Writes a qcow2 image of `mib` MiB whose first sector holds the text at `path`; its bytes. */
export function qcow2With(path: string, mib: number, text: string): Buffer {
  const raw = `${path}.raw`;
  const content = Buffer.alloc(mib * MIB);
  content.write(text);
  writeFileSync(raw, content);
  qemuImg("convert", "-f", "raw", "-O", "qcow2", raw, path);
  return readFileSync(path);
}
