import { execFile } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import {
  type MasqueradePlan,
  NETWORK_RULES_ENV,
  POD_INTERFACE,
  masqueradeRules,
  networkSetupScript,
} from "@kubevirt-ts/node-contract";

// A pod's network namespace for the launcher's tests, as the CNI and then
// the launcher pod's network-setup init container leave it: eth0 on a veth
// whose other end is the test's (the "node"), a default route, the pod's
// resolv.conf, and then the bridge, tap and rules of network-setup's own
// script. The launcher runs in it through `ip netns exec`.

const run = promisify(execFile);

export interface PodNetns {
  name: string;
  /** The pod's address, on eth0. */
  podAddress: string;
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
 * killed run left one.
 */
export async function podNetns(
  name: string,
  index: number,
  plan: MasqueradePlan,
  resolvConf: string,
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
  ])
    await run(inNetns[0] ?? "ip", [...inNetns.slice(1), ...args]);
  // `ip netns exec` mounts this over /etc/resolv.conf, as the kubelet gives a pod its own.
  await mkdir(`/etc/netns/${netns}`, { recursive: true });
  await writeFile(`/etc/netns/${netns}/resolv.conf`, resolvConf);
  await run("ip", ["netns", "exec", netns, "/bin/sh", "-c", networkSetupScript(plan.guestNetwork)], {
    env: { PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", [NETWORK_RULES_ENV]: masqueradeRules(plan) },
  });
  const uid = String(LAUNCHER_UID);
  const ownTun =
    "mount -t tmpfs -o mode=755 tun /dev/net && mknod -m 600 /dev/net/tun c 10 200 && " +
    `chown ${uid}:${uid} /dev/net/tun && exec "$@"`;
  return {
    name: netns,
    podAddress,
    launcherCommand: (argv) => [...inNetns, "unshare", "--mount", "--", "/bin/sh", "-c", ownTun, "sh", ...argv],
    close,
  };
}
