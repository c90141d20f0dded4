import { type ChildProcess, spawn } from "node:child_process";
import { chown, link, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LAUNCHER_OPS_PORT, LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import type { GuestFolder } from "./guest-files.ts";
import type { PodNetns } from "./pod-netns.ts";

// The launcher as its pod runs it, for the tests that boot a guest through
// it: a process of the qemu user, in a pod's network namespace, with the
// pod's folders in a guest folder, booting with emulation.

/** The pod's folders the launcher uses, in the guest folder. */
export function launcherDirs(folder: GuestFolder) {
  return {
    sockets: join(folder.dir, "sockets"),
    state: join(folder.dir, "state"),
    containerDisks: join(folder.dir, "container-disks"),
    claims: join(folder.dir, "claims"),
  };
}

/** Makes the launcher's folders, owned by its user, as the kubelet makes a pod's volumes. */
export async function makeLauncherDirs(folder: GuestFolder, more: string[] = []): Promise<void> {
  for (const dir of [...Object.values(launcherDirs(folder)), ...more]) {
    await mkdir(dir, { recursive: true });
    await chown(dir, LAUNCHER_UID, LAUNCHER_UID);
  }
}

export interface LauncherProcess {
  child: ChildProcess;
  /** What it printed so far. */
  output(): string;
  /** Waits until check is true, failing at once, with its output, when the launcher exits first. */
  waitFor(check: () => Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
}

/** Starts the launcher in the namespace and waits until `ready` says it is (its ops port's /readyz, as reached). */
export async function startLauncher(
  folder: GuestFolder,
  netns: PodNetns,
  ready: () => Promise<boolean>,
): Promise<LauncherProcess> {
  const dirs = launcherDirs(folder);
  // The qemu user cannot reach this Node under root's home; a hard link in its folder it can.
  const node = join(folder.dir, "node");
  await link(process.execPath, node);
  const [command = "ip", ...args] = netns.launcherCommand([
    "setpriv",
    "--pdeathsig",
    "KILL",
    `--reuid=${String(LAUNCHER_UID)}`,
    `--regid=${String(LAUNCHER_UID)}`,
    "--clear-groups",
    node,
    fileURLToPath(new URL("../src/main.ts", import.meta.url)),
  ]);
  const child = spawn(command, args, {
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
      OPS_PORT: String(LAUNCHER_OPS_PORT),
      LOG_LEVEL: "info",
      SOCKETS_DIR: dirs.sockets,
      STATE_DIR: dirs.state,
      CONTAINER_DISKS_DIR: dirs.containerDisks,
      CLAIM_DISKS_DIR: dirs.claims,
      KERNEL_BOOT_DIR: join(folder.dir, "kernel-boot"),
      ALLOW_EMULATION: "true",
      // Whatever this machine's /dev/kvm allows, the test boots with emulation, as the node's launchers do.
      KVM_DEVICE: join(folder.dir, "no-kvm"),
      GRACE_PERIOD_SECONDS: "3",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const waitFor = async (check: () => Promise<boolean>, what: string, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check().catch(() => false))) {
      if (child.exitCode !== null)
        throw new Error(`the launcher exited (${String(child.exitCode)}) before ${what}:\n${output}`);
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${String(timeoutMs)} ms:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await waitFor(ready, "readiness");
  return { child, output: () => output, waitFor };
}
