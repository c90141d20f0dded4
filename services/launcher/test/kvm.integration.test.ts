import { once } from "node:events";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chown, link, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { LAUNCHER_UID, type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { NodeDevices, SocketsVolume } from "@kubevirt-ts/node-contract";
import { freePort } from "@kubevirt-ts/control-plane";
import { LauncherClient } from "@kubevirt-ts/launcher-protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killQemuUnder } from "../src/libvirt/daemon.ts";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";

// The launcher with KVM, as the device plugin gives it (ADR 23): the
// machine's KVM device as a node of its own in the test's folder, once owned
// by the launcher's user (what containerd's device_ownership_from_security_context
// makes of it in the pod) and once root's with mode 0600 (a node without
// it). Emulation is not allowed. The guest is started paused: this machine's
// KVM cannot run an ordinary guest, and QEMU starting with KVM acceleration
// is what is checked (libvirt's domain type, QEMU's query-kvm). A named CPU
// model: with host-model QEMU exits at once here ("failed to set MSR 0x10a").
// Needs root (mknod) and /dev/kvm.

const exec = promisify(execFile);
const hasKvm = existsSync(NodeDevices.kvm.path) && process.getuid?.() === 0;

let folder: GuestFolder;
const launchers: ChildProcess[] = [];

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "kvm", namespace: "test", uid: "c1f0a2d4-0000-4000-8000-00000000002b" },
  spec: defaultVmiSpec({
    startStrategy: "Paused",
    domain: {
      cpu: { model: "Nehalem" },
      memory: { guest: "64Mi" },
      firmware: {
        kernelBoot: {
          kernelArgs: "console=ttyS0 quiet",
          container: { image: "tiny:1", kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" },
        },
      },
      // No pod network here: the guest's network is launcher.integration.test.ts's.
      devices: { autoattachPodInterface: false },
    },
    terminationGracePeriodSeconds: 1,
  }),
};

/**
 * A launcher as its pod runs it, as the launcher's user; its client, and how to reach its libvirt. With a device node,
 * in a mount namespace of its own where that node is /dev/kvm, as in its container (libvirt looks for KVM there and
 * nowhere else); without one, with a KVM_DEVICE that is not there.
 */
async function startLauncher(
  name: string,
  kvm: string | undefined,
): Promise<{ client: LauncherClient; virsh: (...args: string[]) => Promise<string> }> {
  const dir = join(folder.dir, name);
  // Short names: QEMU's monitor socket lies deep under the state folder, and a unix socket's path has 108 bytes.
  const dirs = { sockets: join(dir, "k"), state: join(dir, "s") };
  for (const d of [dir, ...Object.values(dirs)]) {
    await mkdir(d, { recursive: true });
    await chown(d, LAUNCHER_UID, LAUNCHER_UID);
  }
  const node = join(dir, "node");
  await link(process.execPath, node);
  let output = "";
  const asLauncher = [
    "setpriv",
    "--pdeathsig",
    "KILL",
    `--reuid=${String(LAUNCHER_UID)}`,
    `--regid=${String(LAUNCHER_UID)}`,
    "--clear-groups",
    node,
    fileURLToPath(new URL("../src/main.ts", import.meta.url)),
  ];
  const [command = "", ...args] =
    kvm === undefined
      ? asLauncher
      : [
          "unshare",
          "--mount",
          "--propagation",
          "private",
          "--",
          "sh",
          "-c",
          `mount --bind "$0" ${NodeDevices.kvm.path} && exec "$@"`,
          kvm,
          ...asLauncher,
        ];
  const launcher = spawn(command, args, {
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
      OPS_PORT: String(await freePort()),
      LOG_LEVEL: "info",
      SOCKETS_DIR: dirs.sockets,
      STATE_DIR: dirs.state,
      KERNEL_BOOT_DIR: join(folder.dir, "kernel-boot"),
      ALLOW_EMULATION: "false",
      KVM_DEVICE: kvm === undefined ? join(dir, "no-kvm") : NodeDevices.kvm.path,
      GRACE_PERIOD_SECONDS: "1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  launchers.push(launcher);
  launcher.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  launcher.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const socket = join(dirs.sockets, SocketsVolume.launcher);
  const deadline = Date.now() + 60_000;
  // The socket's file appears when it is bound, a moment before it listens: a connection in that moment is refused.
  let client: LauncherClient | undefined;
  while (!client) {
    if (launcher.exitCode !== null || Date.now() > deadline)
      throw new Error(`the launcher did not open its socket:\n${output}`);
    client = existsSync(socket) ? await LauncherClient.connect(socket).catch(() => undefined) : undefined;
    if (!client) await new Promise((r) => setTimeout(r, 100));
  }
  const uri = `qemu+unix:///session?socket=${join(dirs.state, "libvirt", "run", "libvirt", "libvirt-sock")}`;
  const virsh = async (...args: string[]) =>
    (
      await exec(
        "setpriv",
        [
          `--reuid=${String(LAUNCHER_UID)}`,
          `--regid=${String(LAUNCHER_UID)}`,
          "--clear-groups",
          "virsh",
          "-c",
          uri,
          ...args,
        ],
        { env: { HOME: dirs.state, PATH: "/usr/bin:/bin" } },
      )
    ).stdout;
  return { client, virsh };
}

/** The machine's KVM device as a node in the folder, with the owner and mode given. */
async function kvmNode(name: string, uid: number, mode: string): Promise<string> {
  const { rdev } = await stat(NodeDevices.kvm.path);
  const path = join(folder.dir, name);
  // Linux's dev_t: major in bits 8-19, minor in 0-7 and 20-31.
  await exec("mknod", [
    "-m",
    mode,
    path,
    "c",
    String((rdev >> 8) & 0xfff),
    String((rdev & 0xff) | ((rdev >> 12) & 0xfff00)),
  ]);
  await chown(path, uid, uid);
  return path;
}

beforeAll(async () => {
  if (!hasKvm) return;
  folder = await guestFolder();
}, 300_000);

afterAll(async () => {
  // Each launcher gone before its folders: its libvirt daemon, which dies with it, still removes its files on the way.
  await Promise.all(
    launchers.map(async (launcher) => {
      if (launcher.exitCode !== null || launcher.signalCode !== null) return;
      const exited = once(launcher, "exit");
      launcher.kill("SIGKILL");
      await exited;
    }),
  );
  if (!hasKvm) return;
  await killQemuUnder(folder.dir);
  await removeGuestFolder(folder);
});

describe.skipIf(!hasKvm)("the launcher with KVM and no emulation allowed", () => {
  it(
    "starts QEMU with KVM acceleration when its user can open the device: " + "a kvm domain, query-kvm enabled",
    async () => {
      const { client, virsh } = await startLauncher("u", await kvmNode("kvm-107", LAUNCHER_UID, "0600"));
      expect(await client.call("sync", vmi)).toMatchObject({ state: "Paused", domainType: "kvm" });
      expect(await virsh("dumpxml", "test_kvm")).toMatch(/^<domain type='kvm'/);
      const answer = JSON.parse(
        await virsh("qemu-monitor-command", "test_kvm", JSON.stringify({ execute: "query-kvm" })),
      ) as { return?: unknown };
      expect(answer.return).toEqual({ enabled: true, present: true });
      client.close();
    },
  );

  it("says the device is there but not openable by its user, with its mode, owner and the fix", async () => {
    const { client } = await startLauncher("d", await kvmNode("kvm-root", 0, "0600"));
    const denial = new RegExp(
      "cannot open it read-write \\(EACCES, the device being mode 0600 and owned by 0:0\\): " +
        ".*mode 0666.*device_ownership_from_security_context = true.*enable useEmulation",
    );
    await expect(client.call("sync", vmi)).rejects.toThrow(denial);
    expect(await client.call("state")).toEqual({ state: "NoDomain" });
    client.close();
  });

  it("says the device is missing", async () => {
    const { client } = await startLauncher("m", undefined);
    await expect(client.call("sync", vmi)).rejects.toThrow(
      /is not in the launcher's container: .*devices\.kubevirt\.io\/kvm/,
    );
    client.close();
  });
});
