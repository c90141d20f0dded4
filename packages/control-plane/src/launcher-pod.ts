import { type ChildProcess, spawn } from "node:child_process";
import { chown, copyFile, mkdir, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./ports.ts";

// A launcher as its pod runs it, on this machine, for integration tests:
// its own mount namespace, in which its folder is mounted at the same path
// as every other launcher pod's (so a domain's paths are the same in all of
// them, as a migration needs), its own host name, and the launcher's user.
// The launcher's folders, as the pod's volumes would be, are on this
// machine, where a test (or a handler) reaches them.

export interface LauncherPodOptions {
  /** The pod's host name. */
  name: string;
  /** Where the pod's folders appear in its mount namespace: the same for every pod. */
  root: string;
  /** The pod's folder on this machine (libvirt's state, the disks, the kernel), mounted at root. */
  dir: string;
  /** The sockets volume on this machine, mounted at root/sockets; dir/sockets unless given. */
  socketsDir?: string;
  /** The kernel and initrd to boot, copied into the pod's kernel-boot folder as vmlinuz and initrd.gz. */
  kernelBoot: { kernel: string; initrd: string };
  /** The launcher's user. */
  uid: number;
  /** A Node binary the launcher's user can run, and the launcher's entry point. */
  node: string;
  main: string;
}

export interface LauncherPod {
  name: string;
  dir: string;
  /** The sockets volume, as this machine sees it. */
  sockets: string;
  process: ChildProcess;
  output: () => string;
}

const FOLDERS = {
  sockets: "sockets",
  state: "state",
  containerDisks: "container-disks",
  claims: "claims",
  kernelBoot: "kernel-boot",
} as const;

/** Starts the launcher; resolves once it is ready (its ops port's /readyz). */
export async function startLauncherPod(o: LauncherPodOptions): Promise<LauncherPod> {
  const sockets = o.socketsDir ?? join(o.dir, FOLDERS.sockets);
  for (const path of [o.dir, sockets, ...Object.values(FOLDERS).map((f) => join(o.dir, f))]) {
    await mkdir(path, { recursive: true });
    await chown(path, o.uid, o.uid);
  }
  for (const [from, to] of [
    [o.kernelBoot.kernel, "vmlinuz"],
    [o.kernelBoot.initrd, "initrd.gz"],
  ] as const) {
    const path = join(o.dir, FOLDERS.kernelBoot, to);
    await copyFile(from, path);
    await chown(path, o.uid, o.uid);
  }
  const opsPort = await freePort();
  const binds = [
    `mount --bind ${o.dir} ${o.root}`,
    ...(o.socketsDir ? [`mount --bind ${o.socketsDir} ${join(o.root, FOLDERS.sockets)}`] : []),
  ];
  const script =
    `${binds.join(" && ")} && hostname ${o.name} && exec setpriv --pdeathsig KILL ` +
    `--reuid=${String(o.uid)} --regid=${String(o.uid)} --clear-groups ${o.node} ${o.main}`;
  const child = spawn("unshare", ["--mount", "--uts", "--propagation", "private", "sh", "-c", script], {
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
      OPS_PORT: String(opsPort),
      LOG_LEVEL: "info",
      SOCKETS_DIR: join(o.root, FOLDERS.sockets),
      STATE_DIR: join(o.root, FOLDERS.state),
      CONTAINER_DISKS_DIR: join(o.root, FOLDERS.containerDisks),
      CLAIM_DISKS_DIR: join(o.root, FOLDERS.claims),
      KERNEL_BOOT_DIR: join(o.root, FOLDERS.kernelBoot),
      ALLOW_EMULATION: "true",
      // Whatever this machine's /dev/kvm allows, the guest boots with emulation.
      KVM_DEVICE: join(o.root, "no-kvm"),
      GRACE_PERIOD_SECONDS: "3",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`launcher ${o.name} exited (${String(child.exitCode)}):\n${output}`);
    if (
      (await fetch(`http://127.0.0.1:${String(opsPort)}/readyz`).then(
        (r) => r.status,
        () => 0,
      )) === 200
    )
      break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`launcher ${o.name} was not ready within 60 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { name: o.name, dir: o.dir, sockets, process: child, output: () => output };
}

/**
 * Ends every process of the launcher pods under `dir`, as the end of a pod ends its container's: the launchers, and the
 * libvirtd, virtlogd and QEMU they started, which a killed launcher leaves behind (found by their command line or
 * their libvirt runtime folder).
 */
export async function killLauncherPodProcesses(dir: string): Promise<void> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const read = (file: string) => readFile(`/proc/${entry}/${file}`, "latin1").catch(() => "");
    const cmdline = await read("cmdline");
    const runtimeDir = /(?:^|\0)XDG_RUNTIME_DIR=([^\0]*)/.exec(await read("environ"))?.[1] ?? "";
    if (cmdline.includes(dir) || runtimeDir.startsWith(`${dir}/`)) {
      try {
        process.kill(Number(entry), "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }
}
