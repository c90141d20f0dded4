import {
  type Ipv4Network,
  LAUNCHER_OPS_PORT,
  LAUNCHER_UID,
  MASQUERADE_RESERVED_MAC,
  type VirtualMachineInstance,
  parseIpv4Network,
  podNetworkInterface,
  podNetworkPorts,
} from "@kubevirt-ts/kubevirt-api";

// The guest's way onto the pod network, as KubeVirt's masquerade binding
// builds it (ADR 33): a bridge in the pod's network namespace with the
// gateway's address, a tap device on it that QEMU opens, and nftables rules
// that send what reaches the pod's address on to the guest and masquerade
// what the guest sends out. The launcher pod's network-setup init container
// builds it with NET_ADMIN alone (networkSetupScript); the launcher, with no
// capability, opens the tap through libvirt and answers the guest's DHCP on
// the bridge. Each name and address is spelled here once.

/** The pod's own interface, as the CNI names it. */
export const POD_INTERFACE = "eth0";

/** The links network-setup makes: KubeVirt's names, so that its tools and habits find them. */
export const PodNetworkLinks = { bridge: "k6t-eth0", tap: "tap0" } as const;

/**
 * The bridge's MAC address, the same in every launcher pod (KubeVirt's): a guest that migrated still finds its gateway
 * at the MAC it knew, with no ARP entry to age out first.
 */
export const BRIDGE_MAC = MASQUERADE_RESERVED_MAC;

/** The nftables table network-setup fills, in the family ip. */
export const POD_NETWORK_TABLE = "kubevirt-ts";

/** The guest network's addresses: the gateway (the bridge's) is the first host, the guest the second (KubeVirt's). */
export interface GuestAddresses {
  network: Ipv4Network;
  gateway: string;
  guest: string;
  /** The network's broadcast address, where the launcher sends its DHCP answers. */
  broadcast: string;
}

const toNumber = (address: string) => address.split(".").reduce((sum, octet) => sum * 256 + Number(octet), 0);
const toAddress = (value: number) =>
  [24, 16, 8, 0].map((shift) => String(Math.floor(value / 2 ** shift) % 256)).join(".");

/**
 * The guest network of a masquerade interface unless its pod network names one (vmNetworkCIDR): KubeVirt's is
 * 10.0.2.0/24; this one is kept out of the private ranges, where clusters put their pods and services.
 */
export const DEFAULT_GUEST_NETWORK: Ipv4Network = { address: "198.19.254.0", prefix: 24 };

type NetworkFacts = Pick<VirtualMachineInstance["spec"], "domain" | "networks">;

/** The guest network of the VMI's pod-network interface: its vmNetworkCIDR, or the default. */
export function guestNetworkOf(spec: NetworkFacts, fallback: Ipv4Network = DEFAULT_GUEST_NETWORK): Ipv4Network {
  const cidr = spec.networks?.find((n) => n.pod !== undefined)?.pod?.vmNetworkCIDR;
  // Validation admitted only an IPv4 CIDR; anything else is the default.
  return (cidr === undefined ? undefined : parseIpv4Network(cidr)) ?? fallback;
}

/** The gateway's and the guest's addresses in a guest network (which has room for both: a prefix of at most 30). */
export function guestAddresses(network: Ipv4Network): GuestAddresses {
  if (network.prefix > 30) throw new Error(`the guest network ${cidrOf(network)} has no room for a guest`);
  const base = toNumber(network.address);
  return {
    network,
    gateway: toAddress(base + 1),
    guest: toAddress(base + 2),
    broadcast: toAddress(base + 2 ** (32 - network.prefix) - 1),
  };
}

export const cidrOf = (network: Ipv4Network) => `${network.address}/${String(network.prefix)}`;

/** A port the pod's address forwards to the guest. */
export interface ForwardedPort {
  protocol: "TCP" | "UDP";
  port: number;
}

export interface MasqueradePlan {
  guestNetwork: Ipv4Network;
  /**
   * The ports the interface declares; undefined when it declares none, and then every TCP and UDP port of the pod's
   * address reaches the guest, except the launcher's own (KubeVirt's masquerade).
   */
  ports: readonly ForwardedPort[] | undefined;
}

/**
 * The launcher's own TCP ports on the pod's address, which never reach the guest: its operations port, where the
 * kubelet asks the VMI's probes (a launcher serves no metrics).
 */
export const LAUNCHER_OWN_TCP_PORTS: readonly number[] = [LAUNCHER_OPS_PORT];

/** DHCP's server port: the launcher answers there on the bridge, and only there. */
export const DHCP_SERVER_PORT = 67;

/** The masquerade of the VMI's pod-network interface, if it has one. */
export function masqueradePlan(spec: NetworkFacts, fallback?: Ipv4Network): MasqueradePlan | undefined {
  if (podNetworkInterface(spec) === undefined) return undefined;
  const ports = podNetworkPorts(spec).map(({ protocol, port }) => ({ protocol, port }));
  return { guestNetwork: guestNetworkOf(spec, fallback), ports: ports.length > 0 ? ports : undefined };
}

/**
 * The nftables rules of the masquerade: what reaches the pod's address (all ports, or the declared ones) and ICMP
 * echo go on to the guest; what the guest sends out leaves with the pod's address; DHCP requests are heard from the
 * bridge alone. One table, made anew as a whole, so that running it twice leaves one set of rules.
 */
export function masqueradeRules(plan: MasqueradePlan): string {
  const { guest } = guestAddresses(plan.guestNetwork);
  const pod = `iifname "${POD_INTERFACE}"`;
  const own = LAUNCHER_OWN_TCP_PORTS.map(String).join(", ");
  const forwards =
    plan.ports === undefined
      ? [`${pod} tcp dport { ${own} } return`, `${pod} meta l4proto { tcp, udp } dnat to ${guest}`]
      : (["TCP", "UDP"] as const).flatMap((protocol) => {
          const ports = plan.ports?.filter((p) => p.protocol === protocol).map((p) => String(p.port)) ?? [];
          return ports.length === 0
            ? []
            : [`${pod} ${protocol.toLowerCase()} dport { ${[...new Set(ports)].join(", ")} } dnat to ${guest}`];
        });
  return [
    `table ip ${POD_NETWORK_TABLE}`,
    `delete table ip ${POD_NETWORK_TABLE}`,
    `table ip ${POD_NETWORK_TABLE} {`,
    "  chain prerouting {",
    "    type nat hook prerouting priority dstnat; policy accept;",
    ...forwards.map((rule) => `    ${rule}`),
    `    ${pod} icmp type echo-request dnat to ${guest}`,
    "  }",
    "  chain postrouting {",
    "    type nat hook postrouting priority srcnat; policy accept;",
    `    oifname "${POD_INTERFACE}" ip saddr ${guest} masquerade`,
    "  }",
    "  chain input {",
    "    type filter hook input priority filter; policy accept;",
    `    udp dport ${String(DHCP_SERVER_PORT)} iifname != "${PodNetworkLinks.bridge}" drop`,
    "  }",
    "}",
    "",
  ].join("\n");
}

/** The launcher pod's init container that makes the guest's way onto the pod network. */
export const NETWORK_SETUP_CONTAINER = "network-setup";

/** The variable that hands network-setup its nftables rules. */
export const NETWORK_RULES_ENV = "KUBEVIRT_TS_NETWORK_RULES";

/**
 * What the network-setup init container runs (/bin/sh, as root with NET_ADMIN alone, in the pod's network namespace):
 * the bridge with the gateway's address and the pod interface's MTU, the tap owned by the launcher's user on it, and
 * the rules from NETWORK_RULES_ENV. It refuses a pod whose namespace does not forward (the node's setting, which pods
 * inherit; every Kubernetes node forwards).
 */
export function networkSetupScript(guestNetwork: Ipv4Network): string {
  const { gateway } = guestAddresses(guestNetwork);
  const { bridge, tap } = PodNetworkLinks;
  const uid = String(LAUNCHER_UID);
  return [
    "set -eu",
    'if [ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]; then',
    '  echo "network-setup: the pod\'s network does not forward IPv4 (net.ipv4.ip_forward is 0 on the node)" >&2',
    "  exit 1",
    "fi",
    `mtu=$(cat /sys/class/net/${POD_INTERFACE}/mtu)`,
    `ip link add ${bridge} address ${BRIDGE_MAC} type bridge`,
    `ip link set ${bridge} mtu "$mtu"`,
    `ip address add ${gateway}/${String(guestNetwork.prefix)} dev ${bridge}`,
    `ip tuntap add dev ${tap} mode tap user ${uid} group ${uid}`,
    `ip link set ${tap} mtu "$mtu" master ${bridge} up`,
    `ip link set ${bridge} up`,
    `printf '%s' "$${NETWORK_RULES_ENV}" | nft -f -`,
  ].join("\n");
}
