import { type ChildProcess, spawn } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readFile, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

// A libvirt daemon as the launcher runs it: in session mode, as the
// unprivileged qemu user (107), with its own folders. Tests talk to it
// through its socket; QEMU runs with emulation.

export const QEMU_UID = 107;

export interface SessionLibvirt {
  /** A folder owned by the qemu user, for the guest's files and sockets. */
  dir: string;
  uri: string;
  stop(): Promise<void>;
}

async function waitForFile(path: string, daemon: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await stat(path).then(() => true, () => false))) {
    if (daemon.exitCode !== null) throw new Error(`libvirtd exited (${String(daemon.exitCode)}) before it listened`);
    if (Date.now() > deadline) throw new Error(`libvirtd did not create ${path} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** QEMU outlives a killed libvirtd; its arguments name the session's folder. */
async function killQemuUnder(dir: string): Promise<void> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes("qemu-system") && cmdline.includes(dir)) {
      try {
        process.kill(Number(entry), "SIGKILL");
      } catch {
        // Gone already.
      }
    }
  }
}

export async function startSessionLibvirt(): Promise<SessionLibvirt> {
  const dir = await mkdtemp(join(tmpdir(), "kubevirt-ts-libvirt-"));
  await chmod(dir, 0o755);
  for (const sub of ["run", "config", "cache", "guest"]) await mkdir(join(dir, sub), { mode: sub === "run" ? 0o700 : 0o755 });
  for (const path of [dir, ...["run", "config", "cache", "guest"].map((s) => join(dir, s))]) await chown(path, QEMU_UID, QEMU_UID);
  const env = { HOME: dir, XDG_RUNTIME_DIR: join(dir, "run"), XDG_CONFIG_HOME: join(dir, "config"), XDG_CACHE_HOME: join(dir, "cache"), PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };
  const daemon = spawn("setpriv", ["--pdeathsig", "KILL", `--reuid=${String(QEMU_UID)}`, `--regid=${String(QEMU_UID)}`, "--clear-groups", "libvirtd"], { env, stdio: "ignore" });
  const socket = join(dir, "run", "libvirt", "libvirt-sock");
  await waitForFile(socket, daemon, 20_000);
  return {
    dir,
    uri: `qemu+unix:///session?socket=${socket}`,
    stop: async () => {
      await killQemuUnder(dir);
      daemon.kill("SIGTERM");
      await sleep(200);
      daemon.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    },
  };
}
