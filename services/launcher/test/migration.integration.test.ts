import { once } from "node:events";
import { link, mkdir, readFile, stat } from "node:fs/promises";
import { type Server, type Socket, connect, createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import { SocketsVolume } from "@kubevirt-ts/node-contract";
import { Pki } from "@kubevirt-ts/control-plane";
import { tinyGuestVmiWithScratchDisk } from "@kubevirt-ts/images";
import { type LauncherPod, killLauncherPodProcesses, startLauncherPod } from "@kubevirt-ts/control-plane/launcher-pod";
import {
  LauncherClient,
  MIGRATION_SOCKETS,
  type MigrationSocket,
  type MigrationStatus,
  MigrationTargetProxy,
  type ProxyTls,
  joinStreams,
  startMigrationSourceProxy,
} from "@kubevirt-ts/launcher-protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
import { readUntil } from "./serial.ts";

// Live migration between two launchers on this machine, each as its pod
// runs it: its own mount namespace, in which its folder is mounted at the
// same path as every other launcher pod's (so the domain's paths are the
// same on both sides), its own host name, its own libvirt and QEMU as the
// qemu user. The tiny guest boots with emulation in the first, and moves
// live to the second: first through a plain relay of the migration's
// sockets (what the handlers' proxy does, without TLS), after an aborted
// attempt that leaves it where it was; then on to a third through the
// handlers' mutual-TLS proxy pair.

const HANDLER = "kubevirt-ts-handler";
let folder: GuestFolder;
/** Where every launcher's folder is mounted, in its own mount namespace. */
let podRoot: string;
let node: string;
const pods: Pod[] = [];
/** The three launchers: the guest boots in a, moves to b, then to c. */
let a: Pod;
let b: Pod;
let c: Pod;

interface Pod extends LauncherPod {
  client: LauncherClient;
}

const vmi = tinyGuestVmiWithScratchDisk("c1f0a2d4-0000-4000-8000-00000000001b");

async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen within ${String(timeoutMs)} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Starts a launcher as its pod would, and connects to its socket. */
async function startPod(name: string): Promise<Pod> {
  const started = await startLauncherPod({
    name,
    root: podRoot,
    dir: join(folder.dir, name),
    kernelBoot: folder,
    uid: LAUNCHER_UID,
    node,
    main: fileURLToPath(new URL("../src/main.ts", import.meta.url)),
  });
  const pod: Pod = { ...started, client: await LauncherClient.connect(join(started.sockets, SocketsVolume.launcher)) };
  pods.push(pod);
  return pod;
}

const serial = (pod: Pod) => join(pod.sockets, SocketsVolume.serial);

/**
 * The handlers' part without TLS: the migration's sockets in the source pod's folder, each connection joined to the
 * target pod's socket.
 */
async function plainRelay(
  source: Pod,
  target: Pod,
  options: { stallMemoryAfterMs?: number } = {},
): Promise<() => Promise<void>> {
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  for (const name of Object.values(MIGRATION_SOCKETS)) {
    const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (local) => {
      const remote = connect({ path: join(target.sockets, name), allowHalfOpen: true });
      sockets.push(local, remote);
      joinStreams(local, remote);
      remote.once("connect", () => local.resume());
      // A network that stops carrying the guest's memory: the relay reads no more of it, and the source's QEMU sends no
      // more.
      if (name === MIGRATION_SOCKETS.memory && options.stallMemoryAfterMs !== undefined) {
        setTimeout(() => {
          local.unpipe(remote);
          local.pause();
        }, options.stallMemoryAfterMs);
      }
    });
    const umask = process.umask(0);
    try {
      server.listen(join(source.sockets, name));
    } finally {
      process.umask(umask);
    }
    await once(server, "listening");
    servers.push(server);
  }
  return async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  };
}

const migrationState = (pod: Pod) => () => pod.client.call("migrationState");
const ended = (status: MigrationStatus) => status.phase === "Completed" || status.phase === "Failed";

/** What the guest says it holds: the RAM's mark, the disk's first bytes. */
const GUEST_MARKS =
  "echo ram=$(cat /tmp/mark) disk=$(head -c 13 /dev/vda) up=$(cut -d. -f1 /proc/uptime) done-$((5+5))\n";

let uptimeBefore = 0;

beforeAll(async () => {
  folder = await guestFolder();
  podRoot = join(folder.dir, "p");
  await mkdir(podRoot);
  // The qemu user cannot reach this Node under root's home; a hard link in its folder it can.
  node = join(folder.dir, "node");
  await link(process.execPath, node);
  [a, b] = await Promise.all([startPod("a"), startPod("b")]);
  expect(await a.client.call("sync", vmi)).toMatchObject({ state: "Running", domainType: "qemu" });
  await readUntil(serial(a), "/ # ", "\n");
  // State only this run of the guest has: a file in its RAM, bytes on its pod-local disk.
  const marked = await readUntil(
    serial(a),
    "marked-7",
    "echo kept-in-ram > /tmp/mark; printf disk-kept-42 | dd of=/dev/vda conv=fsync 2>/dev/null; " +
      "echo marked-$((3+4)) up=$(cut -d. -f1 /proc/uptime)\n",
  );
  uptimeBefore = Number(/up=(\d+)/.exec(marked.slice(marked.indexOf("marked-7")))?.[1] ?? "0");
}, 300_000);

afterAll(async () => {
  for (const pod of pods) {
    pod.client.close();
    if (pod.process.exitCode === null) pod.process.kill("SIGKILL");
  }
  await killLauncherPodProcesses(folder.dir);
  await removeGuestFolder(folder);
});

describe("live migration between two launchers", () => {
  it("prepares the target: its libvirt reachable through the sockets volume, no domain defined", async () => {
    expect(await b.client.call("prepareMigrationTarget", vmi)).toEqual({ role: "Target", phase: "Prepared" });
    expect(await b.client.call("prepareMigrationTarget", vmi)).toEqual({ role: "Target", phase: "Prepared" });
    const relay = await stat(join(b.sockets, MIGRATION_SOCKETS.libvirt));
    expect(relay.isSocket()).toBe(true);
    expect(relay.uid).toBe(LAUNCHER_UID);
    expect(relay.mode & 0o777).toBe(0o600);
    expect(await b.client.call("state")).toEqual({ state: "NoDomain" });
    // A target takes its domain from the migration, never from a sync.
    await expect(b.client.call("sync", vmi)).rejects.toThrow("BadRequest: this launcher is a migration target");
  });

  it("reports an aborted migration's progress, and the guest keeps running on the source", async () => {
    const close = await plainRelay(a, b);
    try {
      // At 1 MiB/s the guest's memory takes long enough to be caught under way.
      expect(await a.client.call("migrate", { migrationUid: "migration-0", bandwidthMiB: 1 })).toMatchObject({
        role: "Source",
        migrationUid: "migration-0",
        phase: "Running",
        mode: "PreCopy",
      });
      // Asked again, the migration under way answers; another is refused while it runs.
      expect(await a.client.call("migrate", { migrationUid: "migration-0", bandwidthMiB: 1 })).toMatchObject({
        migrationUid: "migration-0",
        phase: "Running",
      });
      await expect(a.client.call("migrate", { migrationUid: "migration-x" })).rejects.toThrow(
        "BadRequest: another migration (migration-0) is under way",
      );
      const running = await waitFor(
        migrationState(a),
        (s) => (s.progress?.dataProcessed ?? 0) > 0 || ended(s),
        "the migration's progress",
      );
      expect(running.phase).toBe("Running");
      expect(running.progress).toMatchObject({
        elapsedMs: expect.any(Number) as unknown,
        dataTotal: expect.any(Number) as unknown,
        dataRemaining: expect.any(Number) as unknown,
      });
      expect((await a.client.call("abortMigration")).abortStatus).toBe("InProgress");
      const aborted = await waitFor(migrationState(a), ended, "the aborted migration's end");
      expect(aborted).toMatchObject({
        migrationUid: "migration-0",
        phase: "Failed",
        abortStatus: "Succeeded",
        failureReason: "Live migration aborted",
      });
      // One attempt per migration: the same uid gets its end again, not a new attempt.
      expect(await a.client.call("migrate", { migrationUid: "migration-0" })).toEqual(aborted);
    } finally {
      await close();
    }
    expect(await a.client.call("state")).toMatchObject({ state: "Running" });
    expect(await readUntil(serial(a), "still-here-9", "echo still-here-$((4+5))\n")).toContain("still-here-9");
    expect(await b.client.call("state")).toEqual({ state: "NoDomain" });
    expect(await b.client.call("migrationState")).toEqual({ role: "Target", phase: "Prepared" });
  });

  it("aborts a migration that runs past its completion time, without post-copy, saying so", async () => {
    const close = await plainRelay(a, b);
    try {
      // One second per GiB, at 1 MiB/s: over in a second, far from done.
      expect(
        await a.client.call("migrate", { migrationUid: "migration-t", bandwidthMiB: 1, completionTimeoutPerGiB: 1 }),
      ).toMatchObject({ phase: "Running" });
      const timedOut = await waitFor(migrationState(a), ended, "the timed-out migration's end");
      expect(timedOut).toMatchObject({
        phase: "Failed",
        abortStatus: "Succeeded",
        failureReason: "Live migration is not completed after 1 seconds and has been aborted",
      });
    } finally {
      await close();
    }
    expect(await a.client.call("state")).toMatchObject({ state: "Running" });
  });

  it("aborts a migration that makes no progress for its progress timeout, saying it is stuck", async () => {
    // The memory stream stalls a second in, at 1 MiB/s far from done; with no completion time, only the progress
    // timeout ends it.
    const close = await plainRelay(a, b, { stallMemoryAfterMs: 1_000 });
    try {
      expect(
        await a.client.call("migrate", {
          migrationUid: "migration-s",
          bandwidthMiB: 1,
          completionTimeoutPerGiB: 0,
          progressTimeout: 3,
        }),
      ).toMatchObject({ phase: "Running" });
      const stuck = await waitFor(migrationState(a), ended, "the stuck migration's end");
      expect(stuck).toMatchObject({
        phase: "Failed",
        abortStatus: "Succeeded",
        failureReason: expect.stringMatching(
          /^Live migration stuck for [3-9] seconds and has been aborted$/,
        ) as unknown,
      });
    } finally {
      await close();
    }
    expect(await a.client.call("state")).toMatchObject({ state: "Running" });
    expect(await readUntil(serial(a), "unstuck-9", "echo unstuck-$((4+5))\n")).toContain("unstuck-9");
  });

  it(
    "moves the running guest to the target: its RAM and its pod-local disk " + "with it, gone from the source",
    async () => {
      const close = await plainRelay(a, b);
      let done: MigrationStatus;
      try {
        expect(await a.client.call("migrate", { migrationUid: "migration-1" })).toMatchObject({
          role: "Source",
          phase: "Running",
        });
        done = await waitFor(migrationState(a), ended, "the migration's end", 180_000);
      } finally {
        await close();
      }
      expect(done, a.output()).toMatchObject({ phase: "Completed", mode: "PreCopy" });
      expect(done.progress?.dataProcessed).toBeGreaterThan(0);
      expect(done.progress?.downtimeMs).toBeGreaterThan(0);
      const tookMs = Date.parse(done.endTimestamp ?? "") - Date.parse(done.startTimestamp ?? "");
      console.log(
        `direct migration: ${String(tookMs)} ms, libvirt's elapsed ${String(done.progress?.elapsedMs)} ms, ` +
          `downtime ${String(done.progress?.downtimeMs)} ms, ${String(done.progress?.dataProcessed)} bytes`,
      );

      expect(await a.client.call("state")).toMatchObject({ state: "Shutoff", reason: "Migrated" });
      expect(await b.client.call("state")).toMatchObject({ state: "Running", domainType: "qemu" });
      expect(await b.client.call("migrationState")).toMatchObject({ role: "Target", phase: "Completed" });
      const marks = await readUntil(serial(b), "done-10", GUEST_MARKS);
      expect(marks).toContain("ram=kept-in-ram disk=disk-kept-42");
      // The same run of the guest, not a new boot.
      expect(Number(/up=(\d+) done-10/.exec(marks)?.[1])).toBeGreaterThanOrEqual(uptimeBefore);
      // A finished migration is not started again.
      await expect(a.client.call("migrate", { migrationUid: "migration-3" })).rejects.toThrow(
        "BadRequest: the domain's migration has already ended (Completed): it runs on the target",
      );
    },
  );

  it("moves it on to a third launcher through the handlers' mutual-TLS proxy pair", async () => {
    c = await startPod("c");
    const pki = new Pki(folder.dir);
    await pki.createCa("kubevirt-ts-console-ca");
    const pair = await pki.issue({ name: "handler", commonName: HANDLER, usage: "both", hosts: [HANDLER] });
    const tls: ProxyTls = {
      ca: await readFile(pki.ca.cert),
      cert: await readFile(pair.cert),
      key: await readFile(pair.key),
    };
    expect(await c.client.call("prepareMigrationTarget", vmi)).toEqual({ role: "Target", phase: "Prepared" });
    const target = await MigrationTargetProxy.start({ host: "127.0.0.1", port: 0, tls, allowedPeers: [HANDLER] });
    target.allow("migration-2", (kind: MigrationSocket) =>
      Promise.resolve({ path: join(c.sockets, MIGRATION_SOCKETS[kind]), close: () => Promise.resolve() }),
    );
    const source = await startMigrationSourceProxy({
      dir: b.sockets,
      migration: "migration-2",
      target: { host: "127.0.0.1", port: target.port },
      tls,
      serverName: HANDLER,
    });
    let done: MigrationStatus;
    try {
      expect(await b.client.call("migrate", { migrationUid: "migration-2", autoConverge: true })).toMatchObject({
        role: "Source",
        phase: "Running",
      });
      done = await waitFor(migrationState(b), ended, "the migration's end", 180_000);
    } finally {
      await source.close();
      await target.close();
    }
    expect(done, b.output()).toMatchObject({ phase: "Completed" });
    const tookMs = Date.parse(done.endTimestamp ?? "") - Date.parse(done.startTimestamp ?? "");
    console.log(
      `migration through the mTLS proxy: ${String(tookMs)} ms, libvirt's ` +
        `elapsed ${String(done.progress?.elapsedMs)} ms, downtime ${String(done.progress?.downtimeMs)} ` +
        `ms, ${String(done.progress?.dataProcessed)} bytes`,
    );
    expect(await b.client.call("state")).toMatchObject({ state: "Shutoff", reason: "Migrated" });
    expect(await c.client.call("state")).toMatchObject({ state: "Running" });
    expect(await readUntil(serial(c), "done-10", GUEST_MARKS)).toContain("ram=kept-in-ram disk=disk-kept-42");
  });

  it(
    "aborts, saying why, when post-copy is allowed but cannot be had, and " + "the guest runs on at the source",
    async () => {
      // Post-copy needs userfaultfd in the target's QEMU, which an unprivileged QEMU has only where the node allows it
      // (vm.unprivileged_userfaultfd, or /dev/userfaultfd for QEMU 8.1 and later); this machine allows neither.
      const d = await startPod("d");
      expect(await d.client.call("prepareMigrationTarget", vmi)).toEqual({ role: "Target", phase: "Prepared" });
      const close = await plainRelay(c, d);
      let done: MigrationStatus;
      try {
        expect(
          await c.client.call("migrate", {
            migrationUid: "migration-p",
            postCopy: true,
            bandwidthMiB: 1,
            completionTimeoutPerGiB: 1,
          }),
        ).toMatchObject({ phase: "Running", mode: "PreCopy" });
        done = await waitFor(migrationState(c), ended, "the post-copy migration's end", 180_000);
      } finally {
        await close();
      }
      expect(done, JSON.stringify(done)).toMatchObject({
        phase: "Failed",
        failureReason: expect.stringMatching(/[Pp]ostcopy|post-copy/) as unknown,
      });
      expect(await c.client.call("state")).toMatchObject({ state: "Running" });
      expect(await readUntil(serial(c), "done-10", GUEST_MARKS)).toContain("ram=kept-in-ram disk=disk-kept-42");
      expect(await d.client.call("state")).toEqual({ state: "NoDomain" });
    },
  );

  it(
    "lets a source launcher whose guest migrated away exit cleanly once its " + "handler had time to read the end",
    async () => {
      if (a.process.exitCode === null) await once(a.process, "exit");
      expect(a.process.exitCode, a.output()).toBe(0);
      expect(a.output()).toContain("the domain has migrated away; exiting shortly");
    },
  );
});
