import { once } from "node:events";
import { chown, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { type NetConnectOpts, connect } from "node:net";
import { join } from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import {
  defaultVmiSpec,
  LAUNCHER_OPS_PORT,
  LAUNCHER_UID,
  PROBE_PATH,
  type VirtualMachineInstance,
} from "@kubevirt-ts/kubevirt-api";
import { SocketsVolume, podNetworkPlan, portForwardSocket } from "@kubevirt-ts/node-contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killQemuUnder } from "../src/libvirt/daemon.ts";
import { LauncherClient } from "@kubevirt-ts/launcher-protocol";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
import { type LauncherProcess, launcherDirs, makeLauncherDirs, startLauncher } from "./launcher-process.ts";
import { type PodNetns, podNetns } from "./pod-netns.ts";
import { guestNetworkUp, readUntil } from "./serial.ts";

// The launcher alone, as its pod runs it: a process of the qemu user, in a
// pod's network namespace that network-setup's script made ready, that
// starts libvirt, takes the VMI over its socket, boots the tiny guest with
// emulation, gives it its address and the pod's DNS by DHCP, pauses and
// resumes it, and on SIGTERM stops the guest within its grace period and
// exits.

let folder: GuestFolder;
let launcher: LauncherProcess;
let client: LauncherClient;
let netns: PodNetns;
const exec = promisify(execFile);
/** The port of the guest's web server, which its interface declares: the pod's address forwards it. */
const GUEST_WEB_PORT = 8080;
/** The pod's resolver, as the kubelet writes it: the guest gets its servers and search path. */
const RESOLV_CONF = "search test.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.19.0.10\n";
const dirs = () => launcherDirs(folder);
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
  const res = await fetch(`http://${netns.podAddress}:${String(LAUNCHER_OPS_PORT)}${PROBE_PATH[kind]}`);
  const body = (await res.json()) as { reason?: string };
  return { status: res.status, ...(body.reason !== undefined ? { reason: body.reason } : {}) };
}

const waitFor = (check: () => Promise<boolean>, what: string, timeoutMs?: number) =>
  launcher.waitFor(check, what, timeoutMs);

beforeAll(async () => {
  folder = await guestFolder();
  await makeLauncherDirs(folder, [join(dirs().claims, "data"), join(dirs().claims, "golden")]);
  // The ephemeral volume's claim holds a disk whose first bytes are GOLDEN, readable by the launcher's user only.
  const golden = Buffer.alloc(8 * 1024 * 1024);
  golden.write(GOLDEN);
  await writeFile(join(dirs().claims, "golden", "disk.img"), golden, { mode: 0o400 });
  await chown(join(dirs().claims, "golden", "disk.img"), LAUNCHER_UID, LAUNCHER_UID);
  // The guest's web server's port, declared on its pod-network interface (defaulted in).
  const [iface] = vmi.spec.domain.devices.interfaces ?? [];
  if (!iface) throw new Error("the defaulted VMI has no interface");
  iface.ports = [{ name: "web", port: GUEST_WEB_PORT }];
  const plan = podNetworkPlan(vmi.spec);
  if (!plan) throw new Error("the defaulted VMI has no interface on the pod network");
  netns = await podNetns("launcher", 0, plan, RESOLV_CONF, dirs().state);
  launcher = await startLauncher(
    folder,
    netns,
    async () => (await fetch(`http://${netns.podAddress}:${String(LAUNCHER_OPS_PORT)}/readyz`)).status === 200,
  );
  client = await LauncherClient.connect(join(dirs().sockets, SocketsVolume.launcher));
}, 300_000);

afterAll(async () => {
  (client as LauncherClient | undefined)?.close();
  if ((launcher as LauncherProcess | undefined)?.child.exitCode === null) launcher.child.kill("SIGKILL");
  await killQemuUnder(folder.dir);
  await netns.close();
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
    expect(launcher.output()).not.toContain("could not have libvirt probe");
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
    "gives the guest its address, the gateway and the pod's DNS servers and search path by DHCP, and probes it as " +
      "the kubelet asks: TCP and HTTP with its headers, at the guest's address",
    async () => {
      const serial = join(dirs().sockets, "virt-serial0");
      // The guest's network is up once DHCP gave it its address.
      await waitFor(() => guestNetworkUp(serial), "the guest's network");
      const seen = await readUntil(
        serial,
        "END-OF-NET",
        "ip -4 addr show eth0; ip route; cat /etc/resolv.conf; echo END-OF''-NET\n",
      );
      expect(seen).toContain("inet 198.19.254.2/24");
      expect(seen).toContain("default via 198.19.254.1");
      expect(seen).toContain("nameserver 198.19.0.10");
      expect(seen).toContain("search test.svc.cluster.local svc.cluster.local cluster.local");
      // Nothing listens on the port yet: the guest refuses the connection.
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

  it("pauses and unpauses the guest, which answers a ping to the pod's address when it runs", async () => {
    const ping = () =>
      exec("busybox", ["ping", "-c", "1", "-W", "3", netns.podAddress]).then(
        () => true,
        () => false,
      );
    expect(await ping()).toBe(true);
    expect(await client.call("pause")).toMatchObject({ state: "Paused" });
    // The guest answers, not the pod: a paused guest answers nothing.
    expect(await ping()).toBe(false);
    expect(await client.call("unpause")).toMatchObject({ state: "Running" });
    expect(await ping()).toBe(true);
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
    "opens a tunnel to a port of the guest on its pod network as a socket in the sockets volume, once per port; " +
      "the pod's address forwards the declared port",
    async () => {
      expect(await client.call("portForward", { port: GUEST_WEB_PORT, protocol: "tcp" })).toEqual({});
      expect(await client.call("portForward", { port: GUEST_WEB_PORT, protocol: "tcp" })).toEqual({});
      const socket = join(dirs().sockets, portForwardSocket({ port: GUEST_WEB_PORT, protocol: "tcp" }));
      const stats = await stat(socket);
      expect(stats.isSocket()).toBe(true);
      expect(stats.uid).toBe(LAUNCHER_UID);
      expect(stats.mode & 0o777).toBe(0o600);
      // The guest's web server (the probes' test started it) answers through the tunnel, and on the pod's address.
      const ask = (to: NetConnectOpts) =>
        new Promise<string>((resolve, reject) => {
          const conn = connect(to);
          let answer = "";
          conn.setEncoding("utf8").on("data", (chunk: string) => (answer += chunk));
          conn.on("connect", () => {
            conn.write("GET /alive HTTP/1.0\r\nX-Probe: kubevirt-ts\r\n\r\n");
          });
          conn.on("end", () => {
            resolve(answer);
          });
          conn.on("error", reject);
        });
      expect(await ask({ path: socket })).toMatch(/^HTTP\/1\.0 200 OK/);
      expect(await ask({ host: netns.podAddress, port: GUEST_WEB_PORT })).toMatch(/^HTTP\/1\.0 200 OK/);
      // A port the interface does not list reaches the guest through a tunnel, never on the pod's address.
      const serial = join(dirs().sockets, "virt-serial0");
      await readUntil(serial, "second-up", "(nc -ll -p 8081 -e /bin/answer &) && echo second''-up\n");
      await client.call("portForward", { port: 8081, protocol: "tcp" });
      const second = join(dirs().sockets, portForwardSocket({ port: 8081, protocol: "tcp" }));
      // nc listens a moment after the shell started it.
      await waitFor(
        async () => (await ask({ path: second })).startsWith("HTTP/1.0 200 OK"),
        "the second server",
        10_000,
      );
      await expect(ask({ host: netns.podAddress, port: 8081 })).rejects.toThrow(/ECONNREFUSED/);
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
    launcher.child.kill("SIGTERM");
    const [code] = (await once(launcher.child, "exit")) as [number | null];
    expect(code, launcher.output()).toBe(0);
    // The tiny guest has no ACPI daemon: after the grace period it is destroyed.
    expect(launcher.output()).toContain("did not shut down within its grace period; destroying it");
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(
      await stat(join(dirs().sockets, "virt-serial0")).then(
        () => "still there",
        () => "gone",
      ),
    ).toBe("gone");
  });
});
