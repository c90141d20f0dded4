import { constants } from "node:fs";
import type { Stats } from "node:fs";
import { type FileHandle, lstat, open } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import { SOCKETS_VOLUME_ON_NODE, SocketsVolume } from "@kubevirt-ts/node-contract";
import { limits } from "./limits.ts";

// The way into a launcher pod: its sockets volume, under the kubelet's
// folders on this node, holds the launcher's RPC socket, the serial console
// and VNC sockets QEMU listens on, and the serial log. Everything in that
// volume is writable from inside the pod, so a launcher could plant a
// symlink there that leads the privileged handler anywhere on the node (as
// in KubeVirt's CVE-2026-7374). So every part of the path is checked with
// lstat, and the entry itself is opened without following a symlink and
// checked through the open handle: what the handler then uses is the very
// inode it checked, never a path that could be swapped in between.

// Linux's O_PATH: a handle on the inode that neither reads nor follows it.
export const O_PATH = 0o10000000;

/** The sockets the handler uses, under the names the launcher gives them. */
export const SocketName = {
  Launcher: SocketsVolume.launcher,
  Serial: SocketsVolume.serial,
  Vnc: SocketsVolume.vnc,
} as const;
export const SERIAL_LOG_NAME = SocketsVolume.serialLog;

export function podVolumePath(podsDir: string, podUid: string, name: string): string {
  return join(podsDir, podUid, "volumes", SOCKETS_VOLUME_ON_NODE, name);
}

type Kind = "socket" | "file" | "directory";

/** The most the handler reads of one file in a pod's sockets volume: limits.podFileReadBytes. */
export const POD_FILE_MAX_READ_BYTES = limits.podFileReadBytes;

/**
 * Checks each part of the path below podsDir with lstat; throws what is wrong, else answers what lstat saw of the
 * entry.
 */
export async function verifyPodVolumePath(podsDir: string, path: string, kind: Kind): Promise<Stats> {
  const parts = relative(podsDir, path).split(sep);
  if (parts.some((p) => p === ".." || p === "")) throw new Error(`${path} is not inside ${podsDir}`);
  let current = podsDir;
  let stats: Stats | undefined;
  for (const [i, part] of parts.entries()) {
    current = join(current, part);
    stats = await lstat(current);
    if (stats.isSymbolicLink())
      throw new Error(`${current} is a symlink; refusing to follow it out of the pod's volume`);
    if (i === parts.length - 1 && kind !== "directory") checkEntry(current, stats, kind);
    else if (!stats.isDirectory()) throw new Error(`${current} is not a directory`);
  }
  if (!stats) throw new Error(`${path} is not inside ${podsDir}`);
  return stats;
}

function checkEntry(path: string, stats: Stats, kind: Kind): void {
  if (stats.isSymbolicLink()) throw new Error(`${path} is a symlink; refusing to follow it out of the pod's volume`);
  if (kind === "socket" && !stats.isSocket()) throw new Error(`${path} is not a socket`);
  if (kind === "file" && !stats.isFile())
    throw new Error(`${path} is not a regular file (a FIFO, device or folder is refused)`);
  if (stats.uid !== LAUNCHER_UID)
    throw new Error(`${path} belongs to uid ${String(stats.uid)}, not the launcher's (${String(LAUNCHER_UID)})`);
}

/**
 * Opens an entry without following a symlink, and checks the opened inode (and, given what lstat saw of the path, that
 * it is that very inode). The open never waits: O_NONBLOCK, so that a FIFO swapped in for a file (its open blocks
 * until a writer comes) cannot hold one of libuv's four threadpool threads, and O_NOCTTY, so that a terminal's device
 * does not become the handler's.
 */
export async function openChecked(path: string, flags: number, kind: Kind, seen?: Stats): Promise<FileHandle> {
  const handle = await open(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY).catch(
    (error: unknown) => {
      // Without O_PATH, O_NOFOLLOW refuses a symlink itself, with ELOOP.
      if ((error as NodeJS.ErrnoException).code === "ELOOP")
        throw new Error(`${path} is a symlink; refusing to follow it out of the pod's volume`, { cause: error });
      throw error;
    },
  );
  try {
    const stats = await handle.stat();
    checkEntry(path, stats, kind);
    if (seen && (seen.dev !== stats.dev || seen.ino !== stats.ino))
      throw new Error(`${path} was replaced while it was being opened; refusing it`);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

export interface PodSocket {
  /** A path that reaches exactly the checked socket, short enough for a unix socket address. */
  readonly path: string;
  close(): Promise<void>;
}

/** Opens a socket in the pod's sockets volume for connecting; close it once connected. */
export async function openPodSocket(podsDir: string, podUid: string, name: string): Promise<PodSocket> {
  const path = podVolumePath(podsDir, podUid, name);
  const seen = await verifyPodVolumePath(podsDir, path, "socket");
  const handle = await openChecked(path, O_PATH, "socket", seen);
  return { path: `/proc/self/fd/${String(handle.fd)}`, close: () => handle.close() };
}

// Linux's O_DIRECTORY.
const O_DIRECTORY = 0o200000;

/**
 * Opens the pod's sockets folder, checked as its sockets are, to make sockets in (a migration's source proxy): a path
 * that reaches exactly that folder while the handle is open, whatever is swapped in on the way meanwhile.
 */
export async function openPodSocketsDir(podsDir: string, podUid: string): Promise<PodSocket> {
  const path = join(podsDir, podUid, "volumes", SOCKETS_VOLUME_ON_NODE);
  await verifyPodVolumePath(podsDir, path, "directory");
  const handle = await open(path, O_PATH | O_DIRECTORY | constants.O_NOFOLLOW);
  if (!(await handle.stat()).isDirectory()) {
    await handle.close();
    throw new Error(`${path} is not a directory`);
  }
  return { path: `/proc/self/fd/${String(handle.fd)}`, close: () => handle.close() };
}

/** Reads at most the last maxBytes (at most POD_FILE_MAX_READ_BYTES) of a regular file in the pod's sockets volume. */
export async function readPodFileTail(
  podsDir: string,
  podUid: string,
  name: string,
  maxBytes: number,
): Promise<Buffer> {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0 || maxBytes > POD_FILE_MAX_READ_BYTES) {
    throw new RangeError(
      "maxBytes must be a whole number from 0 to POD_FILE_MAX_READ_BYTES " +
        `(${String(POD_FILE_MAX_READ_BYTES)}), not ${String(maxBytes)}`,
    );
  }
  const path = podVolumePath(podsDir, podUid, name);
  const seen = await verifyPodVolumePath(podsDir, path, "file");
  const handle = await openChecked(path, constants.O_RDONLY, "file", seen);
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, size - length);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
