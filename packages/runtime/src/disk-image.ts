import { spawn } from "node:child_process";
import { lstat } from "node:fs/promises";
import { basename, resolve } from "node:path";

// Disk images are hostile input (a tenant's download, upload, claim or
// containerDisk). qemu-img reads them under limits, as CDI and OpenStack
// run it: its CPU time and address space bounded by prlimit (util-linux,
// essential in Debian and so in every image), its output bounded, a wall
// clock on each run. An image's format is probed once, by probeImage, which
// refuses any image that would make QEMU open another file: a backing file,
// a qcow2 external data file, a VMDK extent that is not the image itself
// (OpenStack's OSSA-2024-001); every later qemu-img call is told the format.

export const QEMU_IMG_LIMITS = {
  /** qemu-img info: 30 s of CPU and 1 GiB of address space, CDI's and Nova's limits. */
  info: { cpuSeconds: 30, addressSpaceBytes: 1024 ** 3, wallSeconds: 120 },
  /** A conversion reads the whole image: its CPU time grows with it, so only its address space is bounded. */
  convert: { addressSpaceBytes: 2 * 1024 ** 3 },
  /** What qemu-img may print; more ends the run. */
  outputBytes: 1024 * 1024,
} as const;

/** The formats an image may have: those of one self-contained file (vmdk only when its one extent is itself). */
export const IMAGE_FORMATS = ["raw", "qcow2", "vmdk", "vdi", "vhdx"] as const;

/** An image refused for what it is, the reason saying what to give instead. */
export class ImageRefused extends Error {}

export interface ImageInfo {
  format: string;
  filename: string;
  "virtual-size": number;
  "backing-filename"?: string;
  "full-backing-filename"?: string;
  "format-specific"?: { type: string; data?: { "data-file"?: string; extents?: { filename: string }[] } };
}

interface Limits {
  cpuSeconds?: number;
  addressSpaceBytes: number;
  wallSeconds?: number;
}

/**
 * Runs qemu-img under prlimit; its stdout (at most QEMU_IMG_LIMITS.outputBytes), each chunk's tail also handed to
 * `onStdout`.
 */
export function qemuImg(args: string[], limits: Limits, onStdout?: (text: string) => void): Promise<string> {
  const prlimit = [
    `--as=${String(limits.addressSpaceBytes)}`,
    ...(limits.cpuSeconds ? [`--cpu=${String(limits.cpuSeconds)}`] : []),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn("prlimit", [...prlimit, "--", "qemu-img", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let stopped: string | undefined;
    const stop = (why: string) => {
      stopped ??= why;
      child.kill("SIGKILL");
    };
    const timer = limits.wallSeconds
      ? setTimeout(() => {
          stop(`it ran longer than ${String(limits.wallSeconds)} s`);
        }, limits.wallSeconds * 1000)
      : undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.length > QEMU_IMG_LIMITS.outputBytes)
        stop(`it printed more than ${String(QEMU_IMG_LIMITS.outputBytes)} bytes`);
      onStdout?.(stdout.slice(-200));
      if (onStdout) stdout = stdout.slice(-200);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0 && stopped === undefined) {
        resolve(stdout);
        return;
      }
      const over = limits.cpuSeconds ? `${String(limits.cpuSeconds)} s of CPU or ` : "";
      const why =
        stopped ??
        (signal
          ? `it was stopped by ${signal}, over its limits ` +
            `(${over}${String(limits.addressSpaceBytes / 1024 ** 2)} MiB of address space)`
          : stderr.trim().slice(0, 1000) || `exit ${String(code)}`);
      reject(new ImageRefused(`qemu-img ${args[0] ?? ""} failed: ${why}`));
    });
  });
}

/**
 * The path qemu-img is given: absolute (so no part of it reads as a protocol), never a `json:` pseudo-protocol name.
 */
export function imagePath(path: string): string {
  if (basename(path).startsWith("json:"))
    throw new ImageRefused(
      `the image's file name ${JSON.stringify(basename(path))} begins with "json:", which ` +
        "QEMU reads as options, not a file; rename it",
    );
  return resolve(path);
}

/** Refuses an image that would make QEMU read any file besides itself, or whose format is not one of `formats`. */
export function checkSelfContained(info: ImageInfo, formats: readonly string[] = IMAGE_FORMATS): void {
  const fix = "give a self-contained image (qemu-img convert it to one qcow2 or raw file first)";
  if (!formats.includes(info.format))
    throw new ImageRefused(
      `the image's format is ${info.format}, which is not taken here ` +
        `(only ${formats.join(", ")}); convert it to qcow2 or raw`,
    );
  const backing = info["backing-filename"] ?? info["full-backing-filename"];
  if (backing !== undefined) throw new ImageRefused(`the image has a backing file (${backing}); ${fix}`);
  const data = info["format-specific"]?.data;
  if (data?.["data-file"] !== undefined)
    throw new ImageRefused(`the qcow2 image has an external data file (${data["data-file"]}); ${fix}`);
  const outside = (data?.extents ?? []).find((extent) => extent.filename !== info.filename);
  if (outside !== undefined)
    throw new ImageRefused(`the vmdk image has an extent in another file (${outside.filename}); ${fix}`);
}

/**
 * What qemu-img says of the image at `path`, after checkSelfContained: its format probed once here, or `raw` when the
 * caller knows it (a claim's disk is always raw: a guest that writes a qcow2 header into it must not make it one).
 * `shared`: the image is open by a running QEMU, read despite its lock (-U).
 */
export async function probeImage(
  path: string,
  options: { format?: "raw"; formats?: readonly string[]; shared?: boolean } = {},
): Promise<ImageInfo> {
  const file = imagePath(path);
  const entry = await lstat(file);
  if (!entry.isFile()) throw new ImageRefused(`${file} is not a regular file; give the image as a file`);
  const out = await qemuImg(
    [
      "info",
      "--output=json",
      ...(options.shared ? ["-U"] : []),
      ...(options.format ? ["-f", options.format] : []),
      file,
    ],
    QEMU_IMG_LIMITS.info,
  );
  const info = JSON.parse(out) as ImageInfo;
  checkSelfContained(info, options.formats);
  return info;
}
