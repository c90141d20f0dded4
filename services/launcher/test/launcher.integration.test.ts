import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chown, link, mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultVmiSpec, LAUNCHER_UID, PROBE_PATH, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { SocketsVolume, portForwardSocket } from "@kubevirt-ts/node-contract";
import { freePort } from "@kubevirt-ts/control-plane";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killQemuUnder } from "../src/libvirt/daemon.ts";
import { LauncherClient } from "@kubevirt-ts/launcher-protocol";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
import { readUntil } from "./serial.ts";

// The launcher alone, as its pod runs it: a process of the qemu user that
// starts libvirt, takes the VMI over its socket, boots the tiny guest with
// emulation, pauses and resumes it, and on SIGTERM stops the guest within
// its grace period and exits.

let folder: GuestFolder;
let launcher: ChildProcess;
let output = "";
let client: LauncherClient;
let opsPort: number;
let declaredPort: number;
const dirs = () => ({
  sockets: join(folder.dir, "sockets"),
  state: join(folder.dir, "state"),
  containerDisks: join(folder.dir, "container-disks"),
  claims: join(folder.dir, "claims"),
});
/** The size of the claim the guest's disk vda is on. */
const CLAIM_BYTES = 64 * 1024 * 1024;
/** What the ephemeral volume's claim holds at its start. */
const GOLDEN = "kubevirt-ts-golden-image";

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "tiny", namespace: "test", uid: "c1f0a2d4-0000-4000-8000-00000000000a" },
  spec: defaultVmiSpec({
    domain: {
      memory: { guest: "128Mi" },
      firmware: {
        kernelBoot: {
          kernelArgs: "console=ttyS0 quiet",
          container: { image: "tiny:1", kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" },
        },
      },
      // A disk on a Filesystem-mode claim, whose folder the pod would mount: the launcher makes its disk.img.
      // And vdb, a claim's disk under an overlay (an ephemeral volume): the guest's writes never reach the claim.
      devices: {
        disks: [
          { name: "data", disk: { bus: "virtio" } },
          { name: "golden", disk: { bus: "virtio" } },
        ],
      },
    },
    volumes: [
      { name: "data", persistentVolumeClaim: { claimName: "data" } },
      { name: "golden", ephemeral: { persistentVolumeClaim: { claimName: "golden" } } },
    ],
    terminationGracePeriodSeconds: 3,
    // Checked when the test asks, as the kubelet would: a TCP port and an HTTP path the test serves in the guest.
    // A period of 1 s: the launcher checks the guest at most once a period whoever asks, and the test asks again
    // as soon as it changed the guest.
    readinessProbe: { tcpSocket: { port: 8080 }, timeoutSeconds: 5, periodSeconds: 1 },
    livenessProbe: {
      httpGet: { port: 8080, path: "/alive", httpHeaders: [{ name: "X-Probe", value: "kubevirt-ts" }] },
      timeoutSeconds: 5,
      periodSeconds: 1,
    },
  }),
  // What the controller reports of the claim before the launcher starts.
  status: {
    volumeStatus: [
      {
        name: "data",
        target: "",
        persistentVolumeClaimInfo: {
          claimName: "data",
          volumeMode: "Filesystem",
          accessModes: ["ReadWriteOnce"],
          requests: { storage: "64Mi" },
          capacity: { storage: "64Mi" },
        },
      },
      {
        name: "golden",
        target: "",
        persistentVolumeClaimInfo: {
          claimName: "golden",
          volumeMode: "Filesystem",
          accessModes: ["ReadOnlyMany"],
          requests: { storage: "8Mi" },
          capacity: { storage: "8Mi" },
        },
      },
    ],
  },
};

/** The launcher's answer to the kubelet's probe of that kind: its status and reason. */
async function probe(kind: "liveness" | "readiness"): Promise<{ status: number; reason?: string }> {
  const res = await fetch(`http://127.0.0.1:${String(opsPort)}${PROBE_PATH[kind]}`);
  const body = (await res.json()) as { reason?: string };
  return { status: res.status, ...(body.reason !== undefined ? { reason: body.reason } : {}) };
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (launcher.exitCode !== null)
      throw new Error(`the launcher exited (${String(launcher.exitCode)}) before ${what}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${String(timeoutMs)} ms:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  folder = await guestFolder();
  for (const dir of [...Object.values(dirs()), join(dirs().claims, "data"), join(dirs().claims, "golden")]) {
    await mkdir(dir);
    await chown(dir, LAUNCHER_UID, LAUNCHER_UID);
  }
  // The ephemeral volume's claim holds a disk whose first bytes are GOLDEN, readable by the launcher's user only.
  const golden = Buffer.alloc(8 * 1024 * 1024);
  golden.write(GOLDEN);
  await writeFile(join(dirs().claims, "golden", "disk.img"), golden, { mode: 0o400 });
  await chown(join(dirs().claims, "golden", "disk.img"), LAUNCHER_UID, LAUNCHER_UID);
  // The qemu user cannot reach this Node under root's home; a hard link in its folder it can.
  const node = join(folder.dir, "node");
  await link(process.execPath, node);
  opsPort = await freePort();
  // A port the guest declares on its pod-network interface (defaulted in): here the launcher's network is the host's.
  declaredPort = await freePort();
  const [iface] = vmi.spec.domain.devices.interfaces ?? [];
  if (!iface) throw new Error("the defaulted VMI has no interface");
  iface.ports = [{ name: "test", port: declaredPort }];
  launcher = spawn(
    "setpriv",
    [
      "--pdeathsig",
      "KILL",
      `--reuid=${String(LAUNCHER_UID)}`,
      `--regid=${String(LAUNCHER_UID)}`,
      "--clear-groups",
      node,
      fileURLToPath(new URL("../src/main.ts", import.meta.url)),
    ],
    {
      env: {
        PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        OPS_PORT: String(opsPort),
        LOG_LEVEL: "info",
        SOCKETS_DIR: dirs().sockets,
        STATE_DIR: dirs().state,
        CONTAINER_DISKS_DIR: dirs().containerDisks,
        CLAIM_DISKS_DIR: dirs().claims,
        KERNEL_BOOT_DIR: join(folder.dir, "kernel-boot"),
        ALLOW_EMULATION: "true",
        // Whatever this machine's /dev/kvm allows, the test boots with emulation, as the node's launchers do.
        KVM_DEVICE: join(folder.dir, "no-kvm"),
        GRACE_PERIOD_SECONDS: "3",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  launcher.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  launcher.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  await waitFor(async () => (await fetch(`http://127.0.0.1:${String(opsPort)}/readyz`)).status === 200, "readiness");
  client = await LauncherClient.connect(join(dirs().sockets, SocketsVolume.launcher));
}, 300_000);

afterAll(async () => {
  client.close();
  if (launcher.exitCode === null) launcher.kill("SIGKILL");
  await killQemuUnder(folder.dir);
  await removeGuestFolder(folder);
});

describe("the launcher", () => {
  it("is not ready before it has a domain, and not dead either", async () => {
    expect(await probe("readiness")).toEqual({ status: 503, reason: "the guest has not started yet" });
    expect(await probe("liveness")).toEqual({ status: 200 });
  });

  it("answers on its socket before it has a domain", async () => {
    expect(await client.call("state")).toEqual({ state: "NoDomain" });
    await expect(client.call("pause")).rejects.toThrow("NotDefined: no domain yet: sync the VMI first");
    await expect(client.call("portForward", { port: 22, protocol: "tcp" })).rejects.toThrow(
      "NotDefined: no domain yet: sync the VMI first",
    );
  });

  /** Sends one raw line to the launcher's socket and returns its answer. */
  const exchange = (line: string) =>
    new Promise<unknown>((resolve, reject) => {
      const socket = connect(join(dirs().sockets, SocketsVolume.launcher), () => socket.write(`${line}\n`));
      socket.setEncoding("utf8").once("data", (answer: string) => {
        socket.end();
        resolve(JSON.parse(answer));
      });
      socket.on("error", reject);
    });

  it("has libvirt probe QEMU's capabilities before any domain is defined, off the start's path", async () => {
    // libvirt keeps what it probed in its session cache, one XML file per QEMU binary.
    const cache = join(dirs().state, "libvirt", "cache", "libvirt", "qemu", "cache", "capabilities");
    await waitFor(
      async () => (await readdir(cache).catch(() => [])).some((f) => f.endsWith(".xml")),
      "QEMU's capabilities in libvirt's cache",
    );
    expect(await client.call("state")).toEqual({ state: "NoDomain" });
    expect(output).not.toContain("could not have libvirt probe");
  });

  it("agrees on its protocol version with hello, and refuses another version, saying which it speaks", async () => {
    expect(client.version).toBe(2);
    expect(await exchange('{"version":2,"id":6,"method":"hello","params":{"versions":[1,2,3]}}')).toEqual({
      id: 6,
      result: { version: 2 },
    });
    // A handler of the previous release: version 1, no hello.
    expect(await exchange('{"version":1,"id":5,"method":"state"}')).toMatchObject({ id: 5, result: {} });
    expect(await exchange('{"version":99,"id":7,"method":"state"}')).toEqual({
      id: 7,
      error: { code: "UnsupportedVersion", message: "this launcher speaks versions 1 and 2, not 99" },
    });
  });

  it("refuses a sync whose VMI is malformed, naming the field, and defines nothing", async () => {
    const answer = await exchange(
      JSON.stringify({ version: 1, id: 8, method: "sync", params: { ...vmi, spec: { ...vmi.spec, domain: "big" } } }),
    );
    expect(answer).toMatchObject({
      id: 8,
      error: {
        code: "BadRequest",
        message: expect.stringContaining("invalid params of sync: params.spec.domain: ") as unknown,
      },
    });
    expect(await client.call("state")).toEqual({ state: "NoDomain" });
  });

  it("boots the VMI it is sent, with emulation, and its serial console answers", async () => {
    const status = await client.call("sync", vmi);
    expect(status).toMatchObject({ state: "Running", domainType: "qemu" });
    const serial = join(dirs().sockets, "virt-serial0");
    await readUntil(serial, "/ # ", "\n");
    expect(await readUntil(serial, "launcher-guest-6", "echo launcher-guest-$((2*3))\n")).toContain("launcher-guest-6");
    // Syncing again changes nothing.
    expect(await client.call("sync", vmi)).toMatchObject({ state: "Running" });
  });

  it("makes the claim's disk.img sparse at the claim's size, which the guest sees as vda", async () => {
    const image = await stat(join(dirs().claims, "data", "disk.img"));
    expect(image.size).toBe(CLAIM_BYTES);
    expect(image.blocks * 512).toBeLessThan(CLAIM_BYTES);
    expect(image.uid).toBe(LAUNCHER_UID);
    const serial = join(dirs().sockets, "virt-serial0");
    // The command's echo holds no number: only the guest's answer matches.
    expect(
      await readUntil(
        serial,
        `vda-sectors=${String(CLAIM_BYTES / 512)}`,
        "echo vda-sectors=$(cat /sys/block/vda/size)\n",
      ),
    ).toContain(`vda-sectors=${String(CLAIM_BYTES / 512)}`);
  });

  it(
    "gives an ephemeral claim's disk under an overlay: the guest reads the " + "claim and writes to the overlay alone",
    async () => {
      const serial = join(dirs().sockets, "virt-serial0");
      expect(await readUntil(serial, `golden=${GOLDEN}`, "echo golden=$(head -c 24 /dev/vdb)\n")).toContain(
        `golden=${GOLDEN}`,
      );
      expect(
        await readUntil(
          serial,
          "changed=kubevirt-ts-overlay",
          "printf kubevirt-ts-overlay | dd of=/dev/vdb conv=fsync 2>/dev/null; echo changed=$(head -c 19 /dev/vdb)\n",
        ),
      ).toContain("changed=kubevirt-ts-overlay");
      // The claim's disk is as it was: the write went to the overlay in the launcher's folder.
      expect((await readFile(join(dirs().claims, "golden", "disk.img"))).subarray(0, GOLDEN.length).toString()).toBe(
        GOLDEN,
      );
    },
  );

  it(
    "probes the guest as the kubelet asks: TCP through QEMU's user network, which " +
      "accepts for any guest, and HTTP with its headers",
    async () => {
      const serial = join(dirs().sockets, "virt-serial0");
      // The guest's network is up once DHCP gave it its address.
      await waitFor(
        async () =>
          (
            await readUntil(
              serial,
              "NET=",
              "ip -4 addr show eth0 | grep -q 'inet ' && echo NET''=up || echo NET''=down\n",
              5_000,
            )
          ).includes("NET=up"),
        "the guest's network",
      );
      // Nothing listens on the port yet: the guest refuses the connection, which QEMU's side alone would have accepted.
      expect(await probe("readiness")).toEqual({
        status: 503,
        reason: "tcp port 8080: the guest refused the connection",
      });
      expect((await probe("liveness")).reason).toMatch(/^http GET port 8080\/alive: no answer/);
      // A web server of busybox's nc and a script: 200 for GET /alive with the probe's header, 500 once /tmp/sick
      // exists.
      const script = [
        "cat > /bin/answer <<'EOF'",
        "#!/bin/sh",
        "ok=",
        "while read -r line; do",
        "  line=$(printf %s \"$line\" | tr -d '\\r')",
        '  [ -z "$line" ] && break',
        '  case "$line" in \'GET /alive \'*) ok="${ok}path";; [Xx]-[Pp]robe:\\ kubevirt-ts) ok="${ok}header";; esac',
        "done",
        "if [ -e /tmp/sick ]; then printf 'HTTP/1.0 500 Sick\\r\\n\\r\\n'",
        "elif [ \"$ok\" = pathheader ]; then printf 'HTTP/1.0 200 OK\\r\\n\\r\\nalive\\n'",
        "else printf 'HTTP/1.0 403 Forbidden\\r\\n\\r\\n'; fi",
        "EOF",
        "chmod +x /bin/answer && (nc -ll -p 8080 -e /bin/answer &) && echo serv''ing",
        "",
      ].join("\n");
      await readUntil(serial, "serving", script);
      await waitFor(async () => (await probe("readiness")).status === 200, "the TCP probe to pass", 20_000);
      // Past the probe's period since its last check, so that the answer is a new check of the guest.
      const nextPeriod = () => new Promise((resolve) => setTimeout(resolve, 1_000));
      await nextPeriod();
      expect(await probe("liveness")).toEqual({ status: 200 });
      await readUntil(serial, "sick-now", "touch /tmp/sick && echo sick-''now\n");
      await nextPeriod();
      expect(await probe("liveness")).toEqual({ status: 503, reason: "http GET port 8080/alive: HTTP 500" });
      expect((await probe("readiness")).status).toBe(200);
      await readUntil(serial, "well-again", "rm /tmp/sick && echo well-''again\n");
      await nextPeriod();
      expect(await probe("liveness")).toEqual({ status: 200 });
    },
  );

  it("pauses and unpauses the guest", async () => {
    expect(await client.call("pause")).toMatchObject({ state: "Paused" });
    expect(await client.call("unpause")).toMatchObject({ state: "Running" });
  });

  it("writes a screenshot of the display as PNG into the sockets volume", async () => {
    const { bytes } = await client.call("screenshot");
    const png = await readFile(join(dirs().sockets, SocketsVolume.screenshot));
    expect(png.length).toBe(bytes);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // QEMU's VGA display in text mode: 720×400 or larger.
    expect(png.readUInt32BE(16)).toBeGreaterThanOrEqual(640);
    expect(png.readUInt32BE(20)).toBeGreaterThanOrEqual(400);
  });

  it(
    "opens a tunnel to a port of the guest on its pod network as a socket in " + "the sockets volume, once per port",
    async () => {
      // QEMU's human monitor takes the forwarding rule only on the backend of the VMI's masquerade interface (defaulted
      // in).
      expect(await client.call("portForward", { port: 22, protocol: "tcp" })).toEqual({});
      expect(await client.call("portForward", { port: 22, protocol: "tcp" })).toEqual({});
      const socket = join(dirs().sockets, portForwardSocket({ port: 22, protocol: "tcp" }));
      const stats = await stat(socket);
      expect(stats.isSocket()).toBe(true);
      expect(stats.uid).toBe(LAUNCHER_UID);
      expect(stats.mode & 0o777).toBe(0o600);
      // The tiny guest has no network of its own: QEMU takes the connection, which is all that can be seen of it here.
      const tunnel = connect(socket);
      await once(tunnel, "connect");
      tunnel.destroy();
      // So it does on the port the VMI declares, on the launcher's own address (the pod's, in a cluster).
      const declared = connect({ host: "127.0.0.1", port: declaredPort });
      await once(declared, "connect");
      declared.destroy();
      await expect(client.call("portForward", { port: 0, protocol: "tcp" })).rejects.toThrow(
        /BadRequest: invalid params of portForward: params.port/,
      );
    },
  );

  it("says so when the guest has no agent to report its OS", async () => {
    await expect(client.call("guestOsInfo")).rejects.toThrow(/Failed: virsh qemu-agent-command failed: .*agent/i);
    // Nor can its file systems be frozen, and the domain is not taken for frozen.
    await expect(client.call("freeze", { unfreezeTimeoutSeconds: 60 })).rejects.toThrow(
      /Failed: virsh domfsfreeze failed: [\s\S]*agent is not connected/i,
    );
    expect(await client.call("state")).not.toHaveProperty("fsFreezeStatus");
  });

  it("resets the guest: it boots again", async () => {
    const serial = join(dirs().sockets, "virt-serial0");
    const rebooted = readUntil(serial, "init reached");
    expect(await client.call("reset")).toMatchObject({ state: "Running" });
    expect(await rebooted).toContain("init reached");
  });

  it("passes a soft reboot to the guest through ACPI", async () => {
    // The tiny guest has no ACPI daemon; QEMU takes the request and the guest ignores it.
    expect(await client.call("softReboot")).toMatchObject({ state: "Running" });
  });

  it("on SIGTERM stops the guest within its grace period, then exits 0", async () => {
    const started = Date.now();
    launcher.kill("SIGTERM");
    const [code] = (await once(launcher, "exit")) as [number | null];
    expect(code, output).toBe(0);
    // The tiny guest has no ACPI daemon: after the grace period it is destroyed.
    expect(output).toContain("did not shut down within its grace period; destroying it");
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(
      await stat(join(dirs().sockets, "virt-serial0")).then(
        () => "still there",
        () => "gone",
      ),
    ).toBe("gone");
  });
});
