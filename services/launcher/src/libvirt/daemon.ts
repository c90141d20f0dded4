import { type ChildProcess, spawn } from "node:child_process";
import { chown, mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "@kubevirt-ts/runtime";

// libvirt's daemon in session mode: run by the launcher's own unprivileged
// user, with its configuration, sockets and logs under one folder, so no part
// of it needs root or touches the node. QEMU runs as the same user.

/** virtlogd keeps each serial log to this size, with one older file beside it: at most 2 MiB a VM on the node. */
export const SERIAL_LOG_MAX_BYTES = 1024 * 1024;

export interface LibvirtDaemon {
  uri: string;
  /** The daemon's unix socket, which a migration target relays into its sockets volume. */
  socket: string;
  /**
   * Where this session's libvirt keeps swtpm's state, a folder per domain UUID (kept in session mode under its config
   * folder).
   */
  swtpmStorageDir: string;
  /** Stops the daemon; domains it started must be gone first. */
  stop(): Promise<void>;
}

export interface LibvirtDaemonOptions {
  stateDir: string;
  log: Logger;
  /** Run as this user and group (tests start it as root for the qemu user); the current user when unset. */
  uid?: number;
  /** Dies with the process that started it (tests). */
  dieWithParent?: boolean;
}

/**
 * How often the launcher looks for libvirtd's socket: it appears ~0.1 s after the start, and a look (one stat) costs
 * next to nothing, while a 100 ms step lost ~50 ms of every start.
 */
const SOCKET_LOOK_MS = 10;

async function waitForSocket(path: string, daemon: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await stat(path).then(
      () => true,
      () => false,
    ))
  ) {
    if (daemon.exitCode !== null)
      throw new Error(`libvirtd exited with code ${String(daemon.exitCode)} before it listened`);
    if (Date.now() > deadline) throw new Error(`libvirtd did not create ${path} within ${String(timeoutMs)} ms`);
    await sleep(SOCKET_LOOK_MS);
  }
}

export async function startLibvirtd(options: LibvirtDaemonOptions): Promise<LibvirtDaemon> {
  const { stateDir, log, uid } = options;
  const dirs = {
    HOME: stateDir,
    XDG_RUNTIME_DIR: join(stateDir, "run"),
    XDG_CONFIG_HOME: join(stateDir, "config"),
    XDG_CACHE_HOME: join(stateDir, "cache"),
  };
  for (const dir of Object.values(dirs)) {
    await mkdir(dir, { recursive: true, mode: dir === dirs.XDG_RUNTIME_DIR ? 0o700 : 0o755 });
    if (uid !== undefined) await chown(dir, uid, uid);
  }
  // The session's virtlogd (started by libvirtd) reads its settings here.
  const libvirtConfig = join(dirs.XDG_CONFIG_HOME, "libvirt");
  await mkdir(libvirtConfig, { recursive: true });
  await writeFile(
    join(libvirtConfig, "virtlogd.conf"),
    `max_size = ${String(SERIAL_LOG_MAX_BYTES)}\nmax_backups = 1\n`,
  );
  // Each launcher's libvirt is a host of its own: a migration between two of them is refused as "to the same host"
  // when both take the machine's UUID (two pods on one machine, as the migration test runs them).
  await writeFile(join(libvirtConfig, "libvirtd.conf"), `host_uuid = "${randomUUID()}"\n`);
  if (uid !== undefined) await chown(libvirtConfig, uid, uid);
  const env = { ...dirs, PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" };
  const wrap = [
    ...(options.dieWithParent ? ["--pdeathsig", "KILL"] : []),
    ...(uid !== undefined ? [`--reuid=${String(uid)}`, `--regid=${String(uid)}`, "--clear-groups"] : []),
  ];
  const daemon =
    wrap.length > 0
      ? spawn("setpriv", [...wrap, "libvirtd"], { env, stdio: ["ignore", "ignore", "pipe"] })
      : spawn("libvirtd", [], { env, stdio: ["ignore", "ignore", "pipe"] });
  daemon.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    for (const line of chunk.split("\n")) {
      // Session mode complains about D-Bus and /dev/kvm; neither matters to it.
      if (line.trim() !== "" && !/D-Bus|GDBus|dbus|\/dev\/kvm|GLib-GObject/.test(line)) log.warn("libvirtd", { line });
    }
  });
  const socket = join(dirs.XDG_RUNTIME_DIR, "libvirt", "libvirt-sock");
  await waitForSocket(socket, daemon, 30_000);
  log.info("libvirtd is up", { socket });
  return {
    uri: `qemu+unix:///session?socket=${socket}`,
    socket,
    swtpmStorageDir: join(libvirtConfig, "qemu", "swtpm"),
    stop: async () => {
      const running = () => daemon.exitCode === null && daemon.signalCode === null;
      if (!running()) return;
      const exited = new Promise((resolve) => daemon.once("exit", resolve));
      daemon.kill("SIGTERM");
      await Promise.race([exited, sleep(5_000)]);
      if (running()) daemon.kill("SIGKILL");
    },
  };
}

/** Kills QEMU processes whose arguments name a folder: they outlive a killed libvirtd. */
export async function killQemuUnder(dir: string): Promise<void> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes("qemu-system") && cmdline.includes(dir)) {
      try {
        process.kill(Number(entry), "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }
}
