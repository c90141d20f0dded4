import { chown, mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import { launcherSocketPath, verifyLauncherSocket } from "./launcher-socket.ts";

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

describe("verifyLauncherSocket", () => {
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
