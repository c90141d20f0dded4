import { open, readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Ipv4Network } from "@kubevirt-ts/kubevirt-api";
import {
  BRIDGED_POD_INTERFACE_NOTE,
  BRIDGE_LAUNCHER_ADDRESS,
  type BridgedPodInterface,
  POD_INTERFACE,
  PodNetworkLinks,
  guestAddresses,
  inNetwork,
  interfaceAddressOf,
} from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import { type DhcpLease, parseResolvConf } from "./dhcp.ts";
import { type DhcpServer, startDhcpServer } from "./dhcp-server.ts";

// The launcher's part of the guest's way onto the pod network (node-contract's
// pod-network.ts): when network-setup made the bridge, the guest's interface
// takes the pod interface's MTU, and the launcher answers the guest's DHCP
// there with the pod's own DNS settings and host name, so that short Service
// names resolve in the guest as in a pod. Under the masquerade binding the
// guest gets the guest network's address; under the bridge binding, the
// pod's own address, gateway and MAC, which network-setup noted before it
// took them off the pod's interface.

/** What the pod's resolver files hold at most that the launcher reads. */
const RESOLV_CONF_BYTES = 64 * 1024;
/** What network-setup's note holds at most: a few addresses. */
const NOTE_BYTES = 4096;

export interface PodNetwork {
  /** The guest's address, where the launcher reaches it (probes, port forwards). */
  guest: string;
  mtu: number;
  /** The guest's MAC, under the bridge binding: the pod interface's, or the interface's own. */
  mac?: string;
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

/** A file's content, or undefined when it does not exist (any other error is one). */
async function readIfThere(path: string, bytes: number): Promise<string | undefined> {
  try {
    return await readAtMost(path, bytes);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;

/** network-setup's note of the bridged pod interface, checked field by field. */
export function parseBridgedPodInterface(text: string): BridgedPodInterface {
  const note = JSON.parse(text) as Partial<Record<keyof BridgedPodInterface, unknown>>;
  const { address, gateway, guestMac, mtu } = note;
  if (typeof address !== "string" || interfaceAddressOf(address) === undefined)
    throw new Error(`network-setup noted no pod address: ${JSON.stringify(address)}`);
  if (typeof gateway !== "string" || (gateway !== "" && !IPV4.test(gateway)))
    throw new Error(`network-setup noted no gateway: ${JSON.stringify(gateway)}`);
  if (typeof guestMac !== "string" || !MAC.test(guestMac))
    throw new Error(`network-setup noted no MAC: ${JSON.stringify(guestMac)}`);
  if (typeof mtu !== "number" || !Number.isInteger(mtu) || mtu < 68 || mtu > 65535)
    throw new Error(`network-setup noted no MTU: ${JSON.stringify(mtu)}`);
  return { address, gateway, guestMac, mtu };
}

/** The lease of the bridge binding: the pod's address, and its gateway as a route when it is off the pod's network. */
export function bridgedLease(pod: BridgedPodInterface): Omit<DhcpLease, "dnsServers" | "searchDomains"> {
  const own = interfaceAddressOf(pod.address);
  if (!own) throw new Error(`not an interface address: ${pod.address}`);
  const router = pod.gateway === "" ? undefined : pod.gateway;
  const offLink = router !== undefined && !inNetwork(router, own.network);
  return {
    server: BRIDGE_LAUNCHER_ADDRESS,
    guest: own.address,
    prefix: own.network.prefix,
    broadcast: own.broadcast,
    router,
    ...(offLink
      ? {
          routes: [
            { destination: { address: router, prefix: 32 }, router: "0.0.0.0" },
            { destination: { address: "0.0.0.0", prefix: 0 }, router },
          ],
        }
      : {}),
    mtu: pod.mtu,
  };
}

/** undefined when the pod has no bridge (the VMI has no interface on the pod network). */
export async function startPodNetwork(
  guestNetwork: Ipv4Network,
  log: Logger,
  files: { sysClassNet?: string; resolvConf?: string; notesDir: string },
): Promise<PodNetwork | undefined> {
  const sys = files.sysClassNet ?? "/sys/class/net";
  const bridgeMtu = await readFile(`${sys}/${PodNetworkLinks.bridge}/mtu`, "utf8").catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  });
  if (bridgeMtu === undefined) return undefined;
  const dns = parseResolvConf(await readAtMost(files.resolvConf ?? "/etc/resolv.conf", RESOLV_CONF_BYTES));
  const names = { dnsServers: dns.nameservers, searchDomains: dns.search, hostname: hostname() };
  const note = await readIfThere(join(files.notesDir, BRIDGED_POD_INTERFACE_NOTE), NOTE_BYTES);
  if (note !== undefined) {
    const pod = parseBridgedPodInterface(note);
    const lease = { ...bridgedLease(pod), ...names };
    // The guest has no address yet: the answer goes to the address it is offered, which network-setup routed to it.
    const dhcp = await startDhcpServer(lease, log, lease.guest);
    return { guest: lease.guest, mtu: pod.mtu, mac: pod.guestMac, dhcp };
  }
  const mtu = Number((await readFile(`${sys}/${POD_INTERFACE}/mtu`, "utf8")).trim());
  const { gateway, guest, broadcast } = guestAddresses(guestNetwork);
  const dhcp = await startDhcpServer(
    { server: gateway, guest, prefix: guestNetwork.prefix, broadcast, router: gateway, mtu, ...names },
    log,
  );
  return { guest, mtu, dhcp };
}
