import { once } from "node:events";
import { chown, lstat, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import { O_PATH, SERIAL_LOG_NAME, SocketName, openChecked, openPodSocket, openPodSocketsDir, podVolumePath, readPodFileTail, verifyPodVolumePath } from "./pod-volume.ts";

let podsDir: string;
beforeEach(async () => {
  podsDir = await mkdtemp(join(tmpdir(), "pods-"));
});
afterEach(async () => {
  await rm(podsDir, { recursive: true, force: true });
});

async function listen(path: string, uid = LAUNCHER_UID): Promise<() => Promise<void>> {
  await mkdir(dirname(path), { recursive: true });
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  await chown(path, uid, uid);
  return () => new Promise((resolve) => server.close(() => { resolve(); }));
}

const launcherSocketPath = (dir: string, uid: string) => podVolumePath(dir, uid, SocketName.Launcher);
const verifyLauncherSocket = (dir: string, path: string) => verifyPodVolumePath(dir, path, "socket");

describe("verifyPodVolumePath", () => {
  it("accepts the launcher's socket in its pod's sockets volume", async () => {
    const socket = launcherSocketPath(podsDir, "pod-uid");
    const close = await listen(socket);
    await expect(verifyLauncherSocket(podsDir, socket)).resolves.toBeUndefined();
    await close();
  });

  it("refuses a sockets folder that is a symlink out of the pod", async () => {
    const elsewhere = join(podsDir, "..", `${podsDir.split("/").pop() ?? ""}-elsewhere`);
    const close = await listen(join(elsewhere, "launcher.sock"));
    const volume = join(podsDir, "pod-uid", "volumes", "kubernetes.io~empty-dir");
    await mkdir(volume, { recursive: true });
    await symlink(elsewhere, join(volume, "sockets"));
    await expect(verifyLauncherSocket(podsDir, launcherSocketPath(podsDir, "pod-uid"))).rejects.toThrow(/sockets is a symlink; refusing to follow it/);
    await close();
    await rm(elsewhere, { recursive: true, force: true });
  });

  it("refuses a socket that is a symlink", async () => {
    const real = join(podsDir, "real.sock");
    const close = await listen(real);
    const socket = launcherSocketPath(podsDir, "pod-uid");
    await mkdir(dirname(socket), { recursive: true });
    await symlink(real, socket);
    await expect(verifyLauncherSocket(podsDir, socket)).rejects.toThrow(/launcher.sock is a symlink/);
    await close();
  });

  it("refuses a socket of another user", async () => {
    const socket = launcherSocketPath(podsDir, "pod-uid");
    const close = await listen(socket, 0);
    await expect(verifyLauncherSocket(podsDir, socket)).rejects.toThrow(/belongs to uid 0, not the launcher's \(107\)/);
    await close();
  });

  it("refuses a path out of the pods folder", async () => {
    await expect(verifyLauncherSocket(podsDir, join(podsDir, "..", "x.sock"))).rejects.toThrow(/is not inside/);
  });
});

describe("openPodSocket", () => {
  it("connects to the checked socket through a short path", async () => {
    const socket = launcherSocketPath(podsDir, "pod-uid");
    const close = await listen(socket);
    const opened = await openPodSocket(podsDir, "pod-uid", SocketName.Launcher);
    expect(opened.path).toMatch(/^\/proc\/self\/fd\/\d+$/);
    const connection = createConnection(opened.path);
    await once(connection, "connect");
    connection.destroy();
    await opened.close();
    await close();
  });

  it("refuses a socket swapped for a symlink after its path was checked", async () => {
    const real = join(podsDir, "real.sock");
    const close = await listen(real, 0);
    const socket = podVolumePath(podsDir, "pod-uid", SocketName.Serial);
    await mkdir(dirname(socket), { recursive: true });
    await symlink(real, socket);
    // Past the path check, the open itself sees the symlink and refuses it.
    await expect(openChecked(socket, O_PATH, "socket")).rejects.toThrow(/virt-serial0 is a symlink/);
    await close();
  });
});

describe("readPodFileTail", () => {
  it("reads the last bytes of the serial log", async () => {
    const log = podVolumePath(podsDir, "pod-uid", SERIAL_LOG_NAME);
    await mkdir(dirname(log), { recursive: true });
    await writeFile(log, "first line\nlogin: ");
    await chown(log, LAUNCHER_UID, LAUNCHER_UID);
    expect((await readPodFileTail(podsDir, "pod-uid", SERIAL_LOG_NAME, 7)).toString()).toBe("login: ");
    expect((await readPodFileTail(podsDir, "pod-uid", SERIAL_LOG_NAME, 1000)).toString()).toBe("first line\nlogin: ");
  });

  it("refuses a log that is a symlink to a file of the node", async () => {
    const log = podVolumePath(podsDir, "pod-uid", SERIAL_LOG_NAME);
    await mkdir(dirname(log), { recursive: true });
    await symlink("/etc/shadow", log);
    await expect(readPodFileTail(podsDir, "pod-uid", SERIAL_LOG_NAME, 100)).rejects.toThrow(/serial0.log is a symlink/);
  });
});

describe("openPodSocketsDir", () => {
  it("opens the pod's sockets folder so that a socket made through its handle lands in it, and unlinks there", async () => {
    const volume = dirname(launcherSocketPath(podsDir, "pod-uid"));
    await mkdir(volume, { recursive: true });
    const dir = await openPodSocketsDir(podsDir, "pod-uid");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(dir.path, "migration-memory.sock"), resolve));
    expect((await lstat(join(volume, "migration-memory.sock"))).isSocket()).toBe(true);
    await new Promise((resolve) => server.close(resolve));
    await dir.close();
    await expect(lstat(join(volume, "migration-memory.sock"))).rejects.toThrow(/ENOENT/);
  });

  it("refuses a sockets folder that is a symlink out of the pod", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "elsewhere-"));
    const volume = join(podsDir, "pod-uid", "volumes", "kubernetes.io~empty-dir");
    await mkdir(volume, { recursive: true });
    await symlink(elsewhere, join(volume, "sockets"));
    await expect(openPodSocketsDir(podsDir, "pod-uid")).rejects.toThrow(/sockets is a symlink; refusing to follow it/);
    await rm(elsewhere, { recursive: true, force: true });
  });
});
