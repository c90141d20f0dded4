import { open, readFile } from "node:fs/promises";
import { hostname } from "node:os";
import type { Ipv4Network } from "@kubevirt-ts/kubevirt-api";
import { POD_INTERFACE, PodNetworkLinks, guestAddresses } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import { parseResolvConf } from "./dhcp.ts";
import { type DhcpServer, startDhcpServer } from "./dhcp-server.ts";

// The launcher's part of the masquerade (node-contract's pod-network.ts):
// when network-setup made the bridge, the guest's interface takes the pod
// interface's MTU, and the launcher answers the guest's DHCP there with the
// pod's own DNS settings and host name, so that short Service names resolve
// in the guest as in a pod.

/** What the pod's resolver files hold at most that the launcher reads. */
const RESOLV_CONF_BYTES = 64 * 1024;

export interface PodNetwork {
  mtu: number;
  dhcp: DhcpServer;
}

/** The first `bytes` of a file, never more: the pod's resolver file is shaped by the VMI's dnsConfig. */
async function readAtMost(path: string, bytes: number): Promise<string> {
  const file = await open(path, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await file.close();
  }
}

/** undefined when the pod has no bridge (the VMI has no interface on the pod network). */
export async function startPodNetwork(
  guestNetwork: Ipv4Network,
  log: Logger,
  files: { sysClassNet?: string; resolvConf?: string } = {},
): Promise<PodNetwork | undefined> {
  const sys = files.sysClassNet ?? "/sys/class/net";
  const bridgeMtu = await readFile(`${sys}/${PodNetworkLinks.bridge}/mtu`, "utf8").catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  });
  if (bridgeMtu === undefined) return undefined;
  const mtu = Number((await readFile(`${sys}/${POD_INTERFACE}/mtu`, "utf8")).trim());
  const resolv = await readAtMost(files.resolvConf ?? "/etc/resolv.conf", RESOLV_CONF_BYTES);
  const dns = parseResolvConf(resolv);
  const { gateway, guest, broadcast } = guestAddresses(guestNetwork);
  const dhcp = await startDhcpServer(
    {
      server: gateway,
      guest,
      prefix: guestNetwork.prefix,
      broadcast,
      dnsServers: dns.nameservers,
      searchDomains: dns.search,
      hostname: hostname(),
      mtu,
    },
    log,
  );
  return { mtu, dhcp };
}
