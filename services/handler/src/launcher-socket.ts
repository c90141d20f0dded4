import { lstat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";

// The way into a launcher: its socket, in the sockets volume of its pod,
// under the kubelet's folders on this node. Everything below the pod's folder
// is writable from inside the pod, so a launcher could plant a symlink there
// that leads the privileged handler anywhere on the node (as in KubeVirt's
// CVE-2026-7374): every part of the path must be what it should be, and
// none a symlink.

const SOCKETS_VOLUME = "kubernetes.io~empty-dir/sockets";
export const LAUNCHER_SOCKET_NAME = "launcher.sock";

export function launcherSocketPath(podsDir: string, podUid: string): string {
  return join(podsDir, podUid, "volumes", SOCKETS_VOLUME, LAUNCHER_SOCKET_NAME);
}

/** Checks each part of the path below podsDir with lstat; throws what is wrong. */
export async function verifyLauncherSocket(podsDir: string, socket: string): Promise<void> {
  const parts = relative(podsDir, socket).split(sep);
  if (parts.some((p) => p === ".." || p === "")) throw new Error(`${socket} is not inside ${podsDir}`);
  let path = podsDir;
  for (const [i, part] of parts.entries()) {
    path = join(path, part);
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) throw new Error(`${path} is a symlink; refusing to follow it out of the pod's volume`);
    const last = i === parts.length - 1;
    if (last && !stats.isSocket()) throw new Error(`${path} is not a socket`);
    if (last && stats.uid !== LAUNCHER_UID) throw new Error(`${path} belongs to uid ${String(stats.uid)}, not the launcher's (${String(LAUNCHER_UID)})`);
    if (!last && !stats.isDirectory()) throw new Error(`${path} is not a directory`);
  }
}
