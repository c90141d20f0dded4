import { execFile } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import {
  NETWORK_NOTES_ENV,
  NETWORK_RULES_ENV,
  POD_INTERFACE,
  type PodNetworkPlan,
  networkSetupScript,
  podNetworkRules,
} from "@kubevirt-ts/node-contract";

// A pod's network namespace for the launcher's tests, as the CNI and then
// the launcher pod's network-setup init container leave it: eth0 on a veth
// whose other end is the test's (the "node"), a default route, the pod's
// resolv.conf, and then the bridge, tap and rules of network-setup's own
// script. The launcher runs in it through `ip netns exec`.

const run = promisify(execFile);

export interface PodNetns {
  name: string;
  /** The pod's address, on eth0 (the guest's under the bridge binding). */
  podAddress: string;
  /** The test's end of the veth, the pod's gateway: its name and the pod interface's MAC, before network-setup. */
  hostLink: string;
  podMac: string;
  /**
   * The command that runs a program in the namespace (with its resolv.conf) as the launcher's container has it: its
   * own /dev/net/tun, owned by the launcher's user, as the node's containerd gives the device plugin's device to a
   * container's runAsUser.
   */
  launcherCommand(argv: string[]): string[];
  close(): Promise<void>;
}

/**
 * Makes the namespace `kvts-<name>` with the pod address 198.18.250.<4n+2>/30 (the test's end .<4n+1>), anew if a
 * killed run left one; network-setup notes what it notes in `notesDir` (the launcher's state folder).
 */
export async function podNetns(
  name: string,
  index: number,
  plan: PodNetworkPlan,
  resolvConf: string,
  notesDir: string,
): Promise<PodNetns> {
  const netns = `kvts-${name}`;
  const hostLink = `kvts-${name}`.slice(0, 15);
  const base = 4 * index;
  const [hostAddress, podAddress] = [`198.18.250.${String(base + 1)}`, `198.18.250.${String(base + 2)}`];
  const close = async () => {
    // What still runs in it (a libvirtd its launcher left behind) would keep the namespace, and its link, alive.
    const pids = await run("ip", ["netns", "pids", netns]).then(
      ({ stdout }) => stdout.split("\n").filter(Boolean),
      () => [],
    );
    for (const pid of pids) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    await run("ip", ["netns", "delete", netns]).catch(() => undefined);
    await run("ip", ["link", "delete", hostLink]).catch(() => undefined);
    await rm(`/etc/netns/${netns}`, { recursive: true, force: true });
  };
  await close();
  await run("ip", ["netns", "add", netns]);
  await run("ip", ["link", "add", hostLink, "type", "veth", "peer", "name", POD_INTERFACE, "netns", netns]);
  await run("ip", ["address", "add", `${hostAddress}/30`, "dev", hostLink]);
  await run("ip", ["link", "set", hostLink, "up"]);
  const inNetns = ["ip", "netns", "exec", netns];
  for (const args of [
    ["ip", "link", "set", "lo", "up"],
    ["ip", "address", "add", `${podAddress}/30`, "dev", POD_INTERFACE],
    ["ip", "link", "set", POD_INTERFACE, "up"],
    ["ip", "route", "add", "default", "via", hostAddress],
    // The launcher pod's own sysctl: its unprivileged launcher answers DHCP on port 67.
    ["sysctl", "-q", "-w", "net.ipv4.ip_unprivileged_port_start=0"],
    // A Kubernetes node forwards, and its pods' namespaces take that from it; this machine may not (yet).
    ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
  ])
    await run(inNetns[0] ?? "ip", [...inNetns.slice(1), ...args]);
  // `ip netns exec` mounts this over /etc/resolv.conf, as the kubelet gives a pod its own.
  await mkdir(`/etc/netns/${netns}`, { recursive: true });
  await writeFile(`/etc/netns/${netns}/resolv.conf`, resolvConf);
  const podMac = (
    await run("ip", ["netns", "exec", netns, "cat", `/sys/class/net/${POD_INTERFACE}/address`])
  ).stdout.trim();
  await run("ip", ["netns", "exec", netns, "/bin/sh", "-c", networkSetupScript(plan)], {
    env: {
      PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
      [NETWORK_RULES_ENV]: podNetworkRules(plan),
      [NETWORK_NOTES_ENV]: notesDir,
    },
  });
  const uid = String(LAUNCHER_UID);
  const ownTun =
    "mount -t tmpfs -o mode=755 tun /dev/net && mknod -m 600 /dev/net/tun c 10 200 && " +
    `chown ${uid}:${uid} /dev/net/tun && exec "$@"`;
  return {
    name: netns,
    podAddress,
    hostLink,
    podMac,
    launcherCommand: (argv) => [...inNetns, "unshare", "--mount", "--", "/bin/sh", "-c", ownTun, "sh", ...argv],
    close,
  };
}
