import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chown, link, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultVmiSpec, LAUNCHER_UID, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { SocketsVolume } from "@kubevirt-ts/node-contract";
import { freePort } from "@kubevirt-ts/control-plane";
import { LauncherClient } from "@kubevirt-ts/launcher-protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killQemuUnder } from "../src/libvirt/daemon.ts";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
import { readUntil } from "./serial.ts";

// The launcher pushes its domain's changes: a `watch` is answered the moment
// libvirt says the domain changed, here the tiny guest powering itself off,
// and the launcher ends by the same event. Its own safety net looks only
// every 60 s and the watch waits up to 60 s, so an answer within a second
// can only come from the event.

let folder: GuestFolder;
let launcher: ChildProcess;
let output = "";
let client: LauncherClient;

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "pushed", namespace: "test", uid: "c1f0a2d4-0000-4000-8000-00000000003c" },
  spec: defaultVmiSpec({
    domain: {
      memory: { guest: "128Mi" },
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

beforeAll(async () => {
  folder = await guestFolder();
  const dirs = { sockets: join(folder.dir, "k"), state: join(folder.dir, "s") };
  for (const dir of Object.values(dirs)) {
    await mkdir(dir);
    await chown(dir, LAUNCHER_UID, LAUNCHER_UID);
  }
  // The qemu user cannot reach this Node under root's home; a hard link in its folder it can.
  const node = join(folder.dir, "node");
  await link(process.execPath, node);
  const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
  launcher = spawn(
    "setpriv",
    [
      "--pdeathsig",
      "KILL",
      `--reuid=${String(LAUNCHER_UID)}`,
      `--regid=${String(LAUNCHER_UID)}`,
      "--clear-groups",
      node,
      main,
    ],
    {
      env: {
        PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        OPS_PORT: String(await freePort()),
        LOG_LEVEL: "info",
        SOCKETS_DIR: dirs.sockets,
        STATE_DIR: dirs.state,
        KERNEL_BOOT_DIR: join(folder.dir, "kernel-boot"),
        ALLOW_EMULATION: "true",
        KVM_DEVICE: join(folder.dir, "no-kvm"),
        GRACE_PERIOD_SECONDS: "3",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  launcher.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  launcher.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const socket = join(dirs.sockets, SocketsVolume.launcher);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const connected = await LauncherClient.connect(socket).catch(() => undefined);
    if (connected) {
      client = connected;
      break;
    }
    if (launcher.exitCode !== null || Date.now() > deadline)
      throw new Error(`the launcher did not open its socket:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}, 300_000);

afterAll(async () => {
  client.close();
  if (launcher.exitCode === null) launcher.kill("SIGKILL");
  await killQemuUnder(folder.dir);
  await removeGuestFolder(folder);
});

describe("the launcher's watch", () => {
  it("answers at once from an older revision, and waits while nothing changes", { timeout: 300_000 }, async () => {
    const first = await client.call("watch", { since: 0, timeoutSeconds: 60 });
    expect(first.status).toEqual({ state: "NoDomain" });
    // The sync changes the domain: a watch from before it is answered at once, with the domain running.
    expect(await client.call("sync", vmi)).toMatchObject({ state: "Running", domainType: "qemu" });
    // The guest's shell: a loaded machine boots it slowly under emulation.
    await readUntil(join(folder.dir, "k", SocketsVolume.serial), "/ # ", "\n", 240_000);
    const running = await client.call("watch", { since: first.revision, timeoutSeconds: 60 });
    expect(running.revision).toBeGreaterThan(first.revision);
    expect(running.status).toMatchObject({ state: "Running" });
    // Nothing changes now: a watch from the current revision is not answered before its time is up.
    const settled = (await client.call("watch", { since: running.revision, timeoutSeconds: 1 })).revision;
    const idle = await client.call("watch", { since: settled, timeoutSeconds: 2 });
    expect(idle).toMatchObject({ revision: settled, status: { state: "Running" } });
  });

  it(
    "answers as the guest powers itself off, by libvirt's event, and the launcher ends by the same event",
    { timeout: 120_000 },
    async () => {
      const { revision } = await client.call("watch", { since: 0, timeoutSeconds: 60 });
      // Each change answers: the domain is Shutdown (the guest has turned itself off) first, and Shutoff once libvirt
      // has seen QEMU out, which takes libvirt a while of its own.
      const changes: { at: number; state: string }[] = [];
      const watched = (async () => {
        for (let since = revision; changes.at(-1)?.state !== "Shutoff";) {
          const change = await client.call("watch", { since, timeoutSeconds: 60 });
          changes.push({ at: performance.now(), state: change.status.state });
          since = change.revision;
        }
      })();
      const serial = join(folder.dir, "k", SocketsVolume.serial);
      // The kernel's last words before it turns the machine off, which "quiet" leaves in.
      const poweredOff = await readUntil(serial, "Power down", "poweroff -f\n").then(() => performance.now());
      await watched;
      expect(changes[0]?.state).toMatch(/^(Shutdown|Shutoff)$/);
      const seen = JSON.stringify(changes.map((c) => ({ ...c, at: Math.round(c.at - poweredOff) })));
      // The answer is libvirt's event, pushed: the watch waits 60 s and the launcher's own look is 60 s apart, so an
      // answer within 10 s can come by no interval. (It is milliseconds on a quiet machine; a loaded one is slower to
      // turn QEMU's end into libvirt's events, and the test asserts the path, not the time.)
      expect((changes[0]?.at ?? Infinity) - poweredOff, seen).toBeLessThan(10_000);
      expect(changes.at(-1)?.state).toBe("Shutoff");
      // The launcher's own look at its domain comes from the event too (its interval is 60 s).
      const code = launcher.exitCode ?? ((await once(launcher, "exit")) as [number | null])[0];
      expect(performance.now() - poweredOff).toBeLessThan(30_000);
      expect(code, output).toBe(0);
      expect(output).toContain("the domain is gone; exiting");
      expect(output).not.toContain("virsh stopped following");
    },
  );
});
