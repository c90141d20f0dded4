import { execFile } from "node:child_process";
import { once } from "node:events";
import { closeSync, constants, openSync } from "node:fs";
import { chown, lstat, mkdir, mkdtemp, open, rename, rm, symlink, writeFile } from "node:fs/promises";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import {
  O_PATH,
  POD_FILE_MAX_READ_BYTES,
  SERIAL_LOG_NAME,
  SocketName,
  openChecked,
  openPodSocket,
  openPodSocketsDir,
  podVolumePath,
  readPodFileTail,
  verifyPodVolumePath,
} from "./pod-volume.ts";
import { threadpoolCheck } from "./threadpool.ts";

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
  return () =>
    new Promise((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
}

const launcherSocketPath = (dir: string, uid: string) => podVolumePath(dir, uid, SocketName.Launcher);
const verifyLauncherSocket = (dir: string, path: string) => verifyPodVolumePath(dir, path, "socket");

describe("verifyPodVolumePath", () => {
  it("accepts the launcher's socket in its pod's sockets volume", async () => {
    const socket = launcherSocketPath(podsDir, "pod-uid");
    const close = await listen(socket);
    expect((await verifyLauncherSocket(podsDir, socket)).isSocket()).toBe(true);
    await close();
  });

  it("refuses a sockets folder that is a symlink out of the pod", async () => {
    const elsewhere = join(podsDir, "..", `${podsDir.split("/").pop() ?? ""}-elsewhere`);
    const close = await listen(join(elsewhere, "launcher.sock"));
    const volume = join(podsDir, "pod-uid", "volumes", "kubernetes.io~empty-dir");
    await mkdir(volume, { recursive: true });
    await symlink(elsewhere, join(volume, "sockets"));
    await expect(verifyLauncherSocket(podsDir, launcherSocketPath(podsDir, "pod-uid"))).rejects.toThrow(
      /sockets is a symlink; refusing to follow it/,
    );
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
  it(
    "opens the pod's sockets folder so that a socket made through its " + "handle lands in it, and unlinks there",
    async () => {
      const volume = dirname(launcherSocketPath(podsDir, "pod-uid"));
      await mkdir(volume, { recursive: true });
      const dir = await openPodSocketsDir(podsDir, "pod-uid");
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(join(dir.path, "migration-memory.sock"), resolve));
      expect((await lstat(join(volume, "migration-memory.sock"))).isSocket()).toBe(true);
      await new Promise((resolve) => server.close(resolve));
      await dir.close();
      await expect(lstat(join(volume, "migration-memory.sock"))).rejects.toThrow(/ENOENT/);
    },
  );

  it("refuses a sockets folder that is a symlink out of the pod", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "elsewhere-"));
    const volume = join(podsDir, "pod-uid", "volumes", "kubernetes.io~empty-dir");
    await mkdir(volume, { recursive: true });
    await symlink(elsewhere, join(volume, "sockets"));
    await expect(openPodSocketsDir(podsDir, "pod-uid")).rejects.toThrow(/sockets is a symlink; refusing to follow it/);
    await rm(elsewhere, { recursive: true, force: true });
  });
});

describe("a file swapped in after its path was checked", () => {
  const mkfifo = (path: string) => promisify(execFile)("mkfifo", [path]);

  it("refuses a FIFO at once, without holding a threadpool thread: file operations still complete", async () => {
    const log = podVolumePath(podsDir, "pod-uid", SERIAL_LOG_NAME);
    await mkdir(dirname(log), { recursive: true });
    await mkfifo(log);
    await chown(log, LAUNCHER_UID, LAUNCHER_UID);
    const started = Date.now();
    // More opens than libuv has threads: a blocking open of each would hold them all.
    const opens = Array.from({ length: 8 }, () => openChecked(log, constants.O_RDONLY, "file"));
    const settled = await Promise.allSettled(opens);
    for (const outcome of settled)
      expect(outcome.status === "rejected" ? String(outcome.reason) : "opened").toMatch(
        /serial0.log is not a regular file/,
      );
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await threadpoolCheck(1_000)()).toBeUndefined();
    await expect(readPodFileTail(podsDir, "pod-uid", SERIAL_LOG_NAME, 100)).rejects.toThrow(/not a regular file/);
  });

  it("refuses a symlink, a device node and a folder where a file was", async () => {
    const log = podVolumePath(podsDir, "pod-uid", SERIAL_LOG_NAME);
    await mkdir(dirname(log), { recursive: true });
    await symlink("/etc/passwd", log);
    await expect(openChecked(log, constants.O_RDONLY, "file")).rejects.toThrow(
      /serial0.log is a symlink; refusing to follow it/,
    );
    await rm(log);
    await promisify(execFile)("mknod", [log, "c", "1", "3"]);
    await chown(log, LAUNCHER_UID, LAUNCHER_UID);
    await expect(openChecked(log, constants.O_RDONLY, "file")).rejects.toThrow(/serial0.log is not a regular file/);
    await rm(log);
    await mkdir(log);
    await chown(log, LAUNCHER_UID, LAUNCHER_UID);
    await expect(openChecked(log, constants.O_RDONLY, "file")).rejects.toThrow(/serial0.log is not a regular file/);
  });

  it("refuses a file replaced between its lstat and its open", async () => {
    const log = podVolumePath(podsDir, "pod-uid", SERIAL_LOG_NAME);
    await mkdir(dirname(log), { recursive: true });
    await writeFile(log, "first");
    await chown(log, LAUNCHER_UID, LAUNCHER_UID);
    const seen = await verifyPodVolumePath(podsDir, log, "file");
    // Made while the first still exists, so that it cannot reuse its inode.
    await writeFile(`${log}.new`, "second");
    await chown(`${log}.new`, LAUNCHER_UID, LAUNCHER_UID);
    await rename(`${log}.new`, log);
    await expect(openChecked(log, constants.O_RDONLY, "file", seen)).rejects.toThrow(
      /serial0.log was replaced while it was being opened/,
    );
  });

  it("reads no more than its named bound", async () => {
    await expect(readPodFileTail(podsDir, "pod-uid", SERIAL_LOG_NAME, POD_FILE_MAX_READ_BYTES + 1)).rejects.toThrow(
      /maxBytes must be a whole number from 0 to POD_FILE_MAX_READ_BYTES/,
    );
  });
});

describe("threadpoolCheck", () => {
  it(
    "says the threadpool is stuck while every thread waits on a FIFO's blocking " +
      "open, and recovers once they return",
    async () => {
      // More than libuv's threads (4 unless UV_THREADPOOL_SIZE says otherwise): those past them wait in its queue.
      const fifos = Array.from({ length: 16 }, (_, i) => join(podsDir, `fifo-${String(i)}`));
      for (const fifo of fifos) await promisify(execFile)("mkfifo", [fifo]);
      // What the handler did before: a plain O_RDONLY open of a FIFO waits for a writer, on a threadpool thread.
      const blocked = fifos.map((fifo) => open(fifo, constants.O_RDONLY));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const check = threadpoolCheck(300);
      expect(await check()).toMatch(/libuv's threadpool is stuck/);
      // Writers, opened on the event loop's own thread, let the blocked opens return. O_RDWR (Linux: it never waits)
      // rather than a non-blocking O_WRONLY, which fails with ENXIO on a FIFO whose blocked open is still queued
      // behind the pool's threads: the writer is then there when that open runs.
      const writers = fifos.map((fifo) => openSync(fifo, constants.O_RDWR));
      for (const handle of await Promise.all(blocked)) await handle.close();
      for (const fd of writers) closeSync(fd);
      await expect.poll(() => check(), { timeout: 3_000 }).toBeUndefined();
    },
  );
});
