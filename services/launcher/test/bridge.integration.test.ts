import { execFile } from "node:child_process";
import { copyFile, readFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { buildProbeClient, tinyGuestDomain } from "@kubevirt-ts/images";
import { LAUNCHER_OPS_PORT, PROBE_PATH, type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { BRIDGED_POD_INTERFACE_NOTE, SocketsVolume, podNetworkPlan } from "@kubevirt-ts/node-contract";
import { LauncherClient } from "@kubevirt-ts/launcher-protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killQemuUnder } from "../src/libvirt/daemon.ts";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
import { type LauncherProcess, launcherDirs, makeLauncherDirs, startLauncher } from "./launcher-process.ts";
import { type PodNetns, podNetns } from "./pod-netns.ts";
import { guestNetworkUp, readUntil } from "./serial.ts";

// The bridge binding, as its pod runs it: network-setup's script puts the
// pod's interface and the tap on the bridge, the launcher gives the guest
// the pod's own address, gateway and MAC by DHCP, and the guest answers on
// the pod's address, from the "node" at the veth's other end. The kubelet's
// probes, which would reach the guest, run the probe client in the pod's
// namespace, which asks the launcher on loopback; the launcher reaches the
// guest at the pod's address.

const exec = promisify(execFile);
let folder: GuestFolder;
let launcher: LauncherProcess;
let client: LauncherClient;
let netns: PodNetns;
let probeClient: string;
const RESOLV_CONF = "search test.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.19.0.10\n";
const dirs = () => launcherDirs(folder);
const serial = () => join(dirs().sockets, "virt-serial0");

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "bridged", namespace: "test", uid: "c1f0a2d4-0000-4000-8000-00000000000b" },
  spec: defaultVmiSpec({
    domain: {
      ...tinyGuestDomain(),
      devices: { interfaces: [{ name: "default", bridge: {} }] },
    },
    networks: [{ name: "default", pod: {} }],
    terminationGracePeriodSeconds: 3,
    readinessProbe: { tcpSocket: { port: 8080 }, timeoutSeconds: 5, periodSeconds: 1 },
  }),
};

/** The probe client in the pod's namespace, as the kubelet's exec probe runs it: its exit code and what it printed. */
async function execProbe(path: string): Promise<{ code: number; said: string }> {
  try {
    const { stdout } = await exec("ip", ["netns", "exec", netns.name, probeClient, String(LAUNCHER_OPS_PORT), path]);
    return { code: 0, said: stdout.trim() };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, said: `${failed.stdout ?? ""}${failed.stderr ?? ""}`.trim() };
  }
}

const ping = () =>
  exec("busybox", ["ping", "-c", "1", "-W", "3", netns.podAddress]).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  folder = await guestFolder();
  await makeLauncherDirs(folder);
  probeClient = join(folder.dir, "probe");
  await copyFile(await buildProbeClient(), probeClient);
  const plan = podNetworkPlan(vmi.spec);
  if (plan?.binding !== "bridge") throw new Error(`the VMI's interface is not bridged: ${JSON.stringify(plan)}`);
  netns = await podNetns("bridge", 1, plan, RESOLV_CONF, dirs().state);
  // The pod's address is the guest's: the launcher's own port is reached on loopback alone, as the probe client does.
  launcher = await startLauncher(folder, netns, async () => (await execProbe("/readyz")).code === 0);
  client = await LauncherClient.connect(join(dirs().sockets, SocketsVolume.launcher));
}, 300_000);

afterAll(async () => {
  (client as LauncherClient | undefined)?.close();
  if ((launcher as LauncherProcess | undefined)?.child.exitCode === null) launcher.child.kill("SIGKILL");
  await killQemuUnder(folder.dir);
  await (netns as PodNetns | undefined)?.close();
  await removeGuestFolder(folder);
});

describe("the bridge binding", () => {
  it("notes the pod's address, gateway and MAC before the guest takes them, and takes the address off", async () => {
    const note = JSON.parse(await readFile(join(dirs().state, BRIDGED_POD_INTERFACE_NOTE), "utf8")) as unknown;
    expect(note).toEqual({
      address: `${netns.podAddress}/30`,
      gateway: "198.18.250.5",
      guestMac: netns.podMac,
      mtu: 1500,
    });
    const { stdout } = await exec("ip", [
      "netns",
      "exec",
      netns.name,
      "ip",
      "-4",
      "-o",
      "address",
      "show",
      "dev",
      "eth0",
    ]);
    expect(stdout).toBe("");
    // Before the guest runs, nothing answers on the pod's address.
    expect(await ping()).toBe(false);
  });

  it("gives the guest the pod's address, gateway, MAC and DNS by DHCP, and the guest answers on it", async () => {
    expect(await client.call("sync", vmi)).toMatchObject({ state: "Running", domainType: "qemu" });
    await readUntil(serial(), "/ # ", "\n");
    await launcher.waitFor(() => guestNetworkUp(serial()), "the guest's network");
    const seen = await readUntil(
      serial(),
      "END-OF-NET",
      "ip -4 addr show eth0; ip route; cat /etc/resolv.conf; cat /sys/class/net/eth0/address; echo END-OF''-NET\n",
    );
    expect(seen).toContain(`inet ${netns.podAddress}/30`);
    expect(seen).toContain("default via 198.18.250.5");
    expect(seen).toContain("nameserver 198.19.0.10");
    expect(seen).toContain("search test.svc.cluster.local svc.cluster.local cluster.local");
    expect(seen).toContain(netns.podMac);
    // The node finds the pod's address at the pod's own MAC, which the guest has now.
    expect(await ping()).toBe(true);
    const { stdout } = await exec("ip", ["neigh", "show", netns.podAddress, "dev", netns.hostLink]);
    expect(stdout).toContain(netns.podMac);
    // The guest answers, not the pod: a paused guest answers nothing.
    expect(await client.call("pause")).toMatchObject({ state: "Paused" });
    expect(await ping()).toBe(false);
    expect(await client.call("unpause")).toMatchObject({ state: "Running" });
    expect(await ping()).toBe(true);
  });

  it("probes the guest at the pod's address when the kubelet's exec probe asks the launcher", async () => {
    // Nothing listens yet: the guest's own kernel refuses the launcher's connection.
    expect(await execProbe(PROBE_PATH.readiness)).toEqual({
      code: 1,
      said: expect.stringContaining("tcp port 8080: the guest refused the connection") as unknown,
    });
    // A web server of busybox's nc and a script that reads the request to its end, then answers.
    const server = [
      "cat > /bin/answer <<'EOF'",
      "#!/bin/sh",
      "while read -r line; do",
      "  line=$(printf %s \"$line\" | tr -d '\\r')",
      '  [ -z "$line" ] && break',
      "done",
      "printf 'HTTP/1.0 200 OK\\r\\n\\r\\nbridged\\n'",
      "EOF",
      "chmod +x /bin/answer && (nc -ll -p 8080 -e /bin/answer &) && echo serv''ing",
      "",
    ].join("\n");
    await readUntil(serial(), "serving", server);
    await launcher.waitFor(async () => (await execProbe(PROBE_PATH.readiness)).code === 0, "the probe to pass", 20_000);
    // And every port of the pod's address is the guest's, with nothing declared.
    const answer = await new Promise<string>((resolve, reject) => {
      const conn = connect({ host: netns.podAddress, port: 8080 });
      let got = "";
      conn.setEncoding("utf8").on("data", (chunk: string) => (got += chunk));
      conn.on("connect", () => conn.write("GET / HTTP/1.0\r\n\r\n"));
      conn.on("end", () => {
        resolve(got);
      });
      conn.on("error", reject);
    });
    expect(answer).toBe("HTTP/1.0 200 OK\r\n\r\nbridged\n");
  });
});
