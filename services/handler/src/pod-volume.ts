import { constants } from "node:fs";
import { type FileHandle, lstat, open } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { LAUNCHER_UID, SOCKETS_VOLUME_ON_NODE, SocketsVolume } from "@kubevirt-ts/kubevirt-api";

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
export const SocketName = { Launcher: SocketsVolume.launcher, Serial: SocketsVolume.serial, Vnc: SocketsVolume.vnc } as const;
export const SERIAL_LOG_NAME = SocketsVolume.serialLog;

export function podVolumePath(podsDir: string, podUid: string, name: string): string {
  return join(podsDir, podUid, "volumes", SOCKETS_VOLUME_ON_NODE, name);
}

type Kind = "socket" | "file" | "directory";

/** Checks each part of the path below podsDir with lstat; throws what is wrong. */
export async function verifyPodVolumePath(podsDir: string, path: string, kind: Kind): Promise<void> {
  const parts = relative(podsDir, path).split(sep);
  if (parts.some((p) => p === ".." || p === "")) throw new Error(`${path} is not inside ${podsDir}`);
  let current = podsDir;
  for (const [i, part] of parts.entries()) {
    current = join(current, part);
    const stats = await lstat(current);
    if (stats.isSymbolicLink()) throw new Error(`${current} is a symlink; refusing to follow it out of the pod's volume`);
    if (i === parts.length - 1 && kind !== "directory") checkEntry(current, stats, kind);
    else if (!stats.isDirectory()) throw new Error(`${current} is not a directory`);
  }
}

function checkEntry(path: string, stats: { isSocket(): boolean; isFile(): boolean; isSymbolicLink(): boolean; uid: number }, kind: Kind): void {
  if (stats.isSymbolicLink()) throw new Error(`${path} is a symlink; refusing to follow it out of the pod's volume`);
  if (kind === "socket" && !stats.isSocket()) throw new Error(`${path} is not a socket`);
  if (kind === "file" && !stats.isFile()) throw new Error(`${path} is not a regular file`);
  if (stats.uid !== LAUNCHER_UID) throw new Error(`${path} belongs to uid ${String(stats.uid)}, not the launcher's (${String(LAUNCHER_UID)})`);
}

/** Opens an entry without following a symlink, and checks the opened inode. */
export async function openChecked(path: string, flags: number, kind: Kind): Promise<FileHandle> {
  const handle = await open(path, flags | constants.O_NOFOLLOW);
  try {
    checkEntry(path, await handle.stat(), kind);
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
  await verifyPodVolumePath(podsDir, path, "socket");
  const handle = await openChecked(path, O_PATH, "socket");
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

/** Reads at most the last maxBytes of a file in the pod's sockets volume. */
export async function readPodFileTail(podsDir: string, podUid: string, name: string, maxBytes: number): Promise<Buffer> {
  const path = podVolumePath(podsDir, podUid, name);
  await verifyPodVolumePath(podsDir, path, "file");
  const handle = await openChecked(path, constants.O_RDONLY, "file");
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
