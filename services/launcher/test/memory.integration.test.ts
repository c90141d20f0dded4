import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chown, link, mkdir, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { defaultVmiSpec, LAUNCHER_UID, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_NODE_FLAGS, SocketsVolume } from "@kubevirt-ts/node-contract";
import { LAUNCHER_OWN_MEMORY_BYTES, tbCacheBytes } from "@kubevirt-ts/vm-rules";
import { freePort } from "@kubevirt-ts/control-plane";
import { LauncherClient } from "@kubevirt-ts/launcher-protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killQemuUnder } from "../src/libvirt/daemon.ts";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
import { readUntil } from "./serial.ts";

// What a launcher holds in memory besides its guest: the launcher as its image
// runs it (its bundle and Node flags; libvirtd, virtlogd, QEMU under
// emulation) boots the tiny guest, and each process's resident memory is read
// from its smaps, QEMU's guest RAM and translation cache apart.

const MiB = 2 ** 20;
const LAUNCHER_WORKSPACE = fileURLToPath(new URL("..", import.meta.url));
const GUEST_BYTES = 256 * MiB;

let folder: GuestFolder;
let launcher: ChildProcess;
let output = "";
let client: LauncherClient;

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "memory", namespace: "test", uid: "c1f0a2d4-0000-4000-8000-0000000000ee" },
  spec: defaultVmiSpec({
    domain: {
      memory: { guest: `${String(GUEST_BYTES / MiB)}Mi` },
      firmware: {
        kernelBoot: {
          kernelArgs: "console=ttyS0 quiet",
          container: { image: "tiny:1", kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" },
        },
      },
      // No pod network here: the guest's network is launcher.integration.test.ts's.
      devices: { autoattachPodInterface: false },
    },
    terminationGracePeriodSeconds: 3,
  }),
};

interface Resident {
  pid: number;
  name: string;
  rssBytes: number;
  /** QEMU only: the resident part of the guest's RAM and of the translation cache. */
  guestBytes: number;
  tbCacheBytes: number;
  /** The resident part of each mapping of a file, by file and range: processes that map a library share its pages. */
  files: Map<string, number>;
}

/** A process's resident memory from its smaps, the guest's RAM (the mapping of its size) and the cache apart. */
async function resident(pid: number): Promise<Resident> {
  const name = (await readFile(`/proc/${String(pid)}/comm`, "utf8")).trim();
  const smaps = await readFile(`/proc/${String(pid)}/smaps`, "utf8");
  const r: Resident = { pid, name, rssBytes: 0, guestBytes: 0, tbCacheBytes: 0, files: new Map() };
  let size = 0;
  let executable = false;
  let file: string | undefined;
  for (const line of smaps.split("\n")) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ (\S+) ([0-9a-f]+) (\S+) (\d+)/.exec(line);
    if (mapping) {
      executable = mapping[1] === "rwxp";
      file = mapping[4] === "0" ? undefined : `${mapping[3] ?? ""}:${mapping[4] ?? ""}:${mapping[2] ?? ""}`;
    }
    const field = /^(Size|Rss):\s+(\d+) kB$/.exec(line);
    if (!field) continue;
    const bytes = Number(field[2]) * 1024;
    if (field[1] === "Size") size = bytes;
    else {
      r.rssBytes += bytes;
      if (file !== undefined) r.files.set(`${file}:${String(size)}`, bytes);
      else if (name.startsWith("qemu") && size === GUEST_BYTES) r.guestBytes += bytes;
      // The cache is QEMU's one writable and executable mapping, cut into regions by guard pages.
      else if (name.startsWith("qemu") && executable) r.tbCacheBytes += bytes;
    }
  }
  return r;
}

/**
 * Resident memory besides the guest's RAM and the cache: anonymous, the pod's alone, and files', each file's pages
 * once, as a pod's cgroup is charged for them when no other pod on the node has read them first.
 */
function ownBytes(processes: Resident[]): { anonymous: number; files: number } {
  const files = new Map<string, number>();
  let anonymous = 0;
  for (const p of processes) {
    let mapped = 0;
    for (const [key, bytes] of p.files) {
      files.set(key, Math.max(bytes, files.get(key) ?? 0));
      mapped += bytes;
    }
    anonymous += p.rssBytes - mapped - p.guestBytes - p.tbCacheBytes;
  }
  return { anonymous, files: [...files.values()].reduce((a, b) => a + b, 0) };
}

/** The launcher's processes: every one whose command line or environment names its folder. */
async function launcherProcesses(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const read = (file: string) => readFile(`/proc/${entry}/${file}`, "utf8").catch(() => "");
    const text = (await read("cmdline")) + (await read("environ"));
    if (text.includes(folder.dir)) pids.push(Number(entry));
  }
  return pids;
}

beforeAll(async () => {
  folder = await guestFolder();
  const sockets = join(folder.dir, "sockets");
  const state = join(folder.dir, "state");
  for (const dir of [sockets, state, join(folder.dir, "container-disks"), join(folder.dir, "claims")]) {
    await mkdir(dir);
    await chown(dir, LAUNCHER_UID, LAUNCHER_UID);
  }
  const node = join(folder.dir, "node");
  await link(process.execPath, node);
  // The launcher as its image runs it: the one bundled file, not its sources, which Node would load one by one.
  await promisify(execFile)("npm", ["run", "build"], { cwd: LAUNCHER_WORKSPACE });
  const main = join(LAUNCHER_WORKSPACE, "dist", "main.js");
  const user = [`--reuid=${String(LAUNCHER_UID)}`, `--regid=${String(LAUNCHER_UID)}`, "--clear-groups"];
  launcher = spawn("setpriv", ["--pdeathsig", "KILL", ...user, node, ...LAUNCHER_NODE_FLAGS, main], {
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
      OPS_PORT: String(await freePort()),
      LOG_LEVEL: "info",
      SOCKETS_DIR: sockets,
      STATE_DIR: state,
      CONTAINER_DISKS_DIR: join(folder.dir, "container-disks"),
      CLAIM_DISKS_DIR: join(folder.dir, "claims"),
      KERNEL_BOOT_DIR: join(folder.dir, "kernel-boot"),
      ALLOW_EMULATION: "true",
      KVM_DEVICE: join(folder.dir, "no-kvm"),
      GRACE_PERIOD_SECONDS: "3",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // The launcher's last 64 KiB of logs, for a failure's message.
  const keep = (chunk: string) => (output = (output + chunk).slice(-64 * 1024));
  launcher.stdout?.setEncoding("utf8").on("data", keep);
  launcher.stderr?.setEncoding("utf8").on("data", keep);
  const socket = join(sockets, SocketsVolume.launcher);
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      client = await LauncherClient.connect(socket);
      break;
    } catch (error) {
      if (launcher.exitCode !== null || Date.now() > deadline) {
        throw new Error(`the launcher did not answer: ${String(error)}\n${output}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}, 300_000);

afterAll(async () => {
  client.close();
  if (launcher.exitCode === null) launcher.kill("SIGKILL");
  await killQemuUnder(folder.dir);
  await removeGuestFolder(folder);
});

describe("a running launcher's memory", () => {
  it("besides the guest's RAM and QEMU's translation cache is within the launcher's share of the request", async () => {
    expect(await client.call("sync", vmi)).toMatchObject({ state: "Running", domainType: "qemu" });
    const serial = join(folder.dir, "sockets", "virt-serial0");
    await readUntil(serial, "/ # ", "\n", 120_000);
    expect(await readUntil(serial, "memory-guest-6", "echo memory-guest-$((2*3))\n")).toContain("memory-guest-6");
    const tbBytes = tbCacheBytes(GUEST_BYTES);
    const processes = await Promise.all((await launcherProcesses()).map((pid) => resident(pid)));
    const qemu = processes.find((p) => p.name.startsWith("qemu"));
    expect(qemu?.guestBytes).toBeGreaterThan(0);
    const mib = (bytes: number) => (bytes / MiB).toFixed(1);
    const row = (p: Resident) => `${p.name} ${mib(p.rssBytes)}, guest ${mib(p.guestBytes)}, tb ${mib(p.tbCacheBytes)}`;
    const rows = processes.map(row);
    const summed = processes.reduce((sum, p) => sum + p.rssBytes - p.guestBytes - p.tbCacheBytes, 0);
    const { anonymous, files } = ownBytes(processes);
    const own = anonymous + files;
    // The figures, for docs/benchmarks.md: shared files once (the pod's cgroup), and in each process (ps, the bench).
    const parts = `anonymous ${mib(anonymous)}, files ${mib(files)}`;
    console.log(`${rows.join("\n")}\nown: ${mib(own)} MiB (${parts}); ${mib(summed)} MiB in each process`);
    // libvirt gave QEMU the cache's size, and the cache never holds more.
    const cmdline = (await readFile(`/proc/${String(qemu?.pid)}/cmdline`, "utf8")).split("\0");
    expect(cmdline).toContain(`tcg,tb-size=${String(tbBytes / MiB)}`);
    expect(qemu?.tbCacheBytes).toBeLessThanOrEqual(tbBytes);
    expect(own).toBeLessThanOrEqual(LAUNCHER_OWN_MEMORY_BYTES);
  }, 240_000);
});
