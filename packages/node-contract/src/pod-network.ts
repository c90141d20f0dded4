import {
  type Ipv4Network,
  LAUNCHER_OPS_PORT,
  LAUNCHER_UID,
  MASQUERADE_RESERVED_MAC,
  type VirtualMachineInstance,
  cidrOf,
  parseIpv4Network,
  podNetworkInterface,
  podNetworkPorts,
} from "@kubevirt-ts/kubevirt-api";

// The guest's way onto the pod network, as KubeVirt's bindings build it
// (ADR 33), a bridge in the pod's network namespace and a tap device on it
// that QEMU opens:
// - masquerade: the bridge has the gateway's address, and nftables rules send
//   what reaches the pod's address on to the guest and masquerade what the
//   guest sends out;
// - bridge: the pod's own interface joins the bridge, and the guest takes the
//   pod's address, its gateway and its MAC (ADR 34).
// The launcher pod's network-setup init container builds it with NET_ADMIN
// alone (networkSetupScript); the launcher, with no capability, opens the
// tap through libvirt and answers the guest's DHCP on the bridge. Each name
// and address is spelled here once.

/** The pod's own interface, as the CNI names it. */
export const POD_INTERFACE = "eth0";

/** The links network-setup makes: KubeVirt's names, so that its tools and habits find them. */
export const PodNetworkLinks = { bridge: "k6t-eth0", tap: "tap0" } as const;

/**
 * The bridge's MAC address, the same in every launcher pod (KubeVirt's): a guest that migrated still finds its gateway
 * at the MAC it knew, with no ARP entry to age out first.
 */
export const BRIDGE_MAC = MASQUERADE_RESERVED_MAC;

/** The nftables table network-setup fills, in the family ip (masquerade) or bridge (bridge). */
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

const broadcastOf = (network: Ipv4Network) => toAddress(toNumber(network.address) + 2 ** (32 - network.prefix) - 1);

/** The gateway's and the guest's addresses in a guest network (which has room for both: a prefix of at most 30). */
export function guestAddresses(network: Ipv4Network): GuestAddresses {
  if (network.prefix > 30) throw new Error(`the guest network ${cidrOf(network)} has no room for a guest`);
  const base = toNumber(network.address);
  return { network, gateway: toAddress(base + 1), guest: toAddress(base + 2), broadcast: broadcastOf(network) };
}

/** An interface's address as iproute2 prints it (198.18.1.5/24): the address, its network and that's broadcast. */
export function interfaceAddressOf(
  cidr: string,
): { address: string; network: Ipv4Network; broadcast: string } | undefined {
  const network = parseIpv4Network(cidr);
  if (!network) return undefined;
  return { address: cidr.slice(0, cidr.indexOf("/")), network, broadcast: broadcastOf(network) };
}

/** Whether an IPv4 address is in a network. */
export function inNetwork(address: string, network: Ipv4Network): boolean {
  const size = 2 ** (32 - network.prefix);
  return Math.floor(toNumber(address) / size) === Math.floor(toNumber(network.address) / size);
}

/** A port the pod's address forwards to the guest. */
export interface ForwardedPort {
  protocol: "TCP" | "UDP";
  port: number;
}

export interface MasqueradePlan {
  binding: "masquerade";
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
/** DHCP's client port, where the guest hears the launcher's answers. */
export const DHCP_CLIENT_PORT = 68;

export interface BridgePlan {
  binding: "bridge";
  /** The guest's MAC, when the interface names one; otherwise the guest takes the pod interface's own. */
  mac: string | undefined;
}

/** How the VMI's pod-network interface reaches the pod network. */
export type PodNetworkPlan = MasqueradePlan | BridgePlan;

/** The plan of the VMI's pod-network interface, if it has one. */
export function podNetworkPlan(spec: NetworkFacts, fallback?: Ipv4Network): PodNetworkPlan | undefined {
  const name = podNetworkInterface(spec);
  if (name === undefined) return undefined;
  const iface = spec.domain.devices.interfaces?.find((i) => i.name === name);
  if (iface?.bridge !== undefined) return { binding: "bridge", mac: iface.macAddress && macOf(iface.macAddress) };
  const ports = podNetworkPorts(spec).map(({ protocol, port }) => ({ protocol, port }));
  return {
    binding: "masquerade",
    guestNetwork: guestNetworkOf(spec, fallback),
    ports: ports.length > 0 ? ports : undefined,
  };
}

/** A MAC address as libvirt and iproute2 take it: colons, lowercase (KubeVirt's manifests may use hyphens). */
export function macOf(mac: string): string {
  const colons = mac.replaceAll("-", ":").toLowerCase();
  // Validation admitted only a MAC; this one goes into network-setup's script.
  if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(colons)) throw new Error(`not a MAC address: ${JSON.stringify(mac)}`);
  return colons;
}

/**
 * The nftables rules of the masquerade: what reaches the pod's address (all ports, or the declared ones) and ICMP
 * echo go on to the guest; what the guest sends out leaves with the pod's address; DHCP requests are heard from the
 * bridge alone. One table, made anew as a whole, so that running it twice leaves one set of rules.
 */
function masqueradeRules(plan: MasqueradePlan): string {
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
    ...nftTable("ip", [
      {
        name: "prerouting",
        type: "nat",
        priority: "dstnat",
        rules: [...forwards, `${pod} icmp type echo-request dnat to ${guest}`],
      },
      {
        name: "postrouting",
        type: "nat",
        priority: "srcnat",
        rules: [`oifname "${POD_INTERFACE}" ip saddr ${guest} masquerade`],
      },
      DHCP_FROM_THE_BRIDGE_ALONE,
    ]),
    "",
  ].join("\n");
}

/** A chain of network-setup's table: its hook (named as the chain), type and priority, and its rules. */
interface NftChain {
  name: "prerouting" | "postrouting" | "input" | "forward";
  type: "nat" | "filter";
  priority: "dstnat" | "srcnat" | "filter";
  rules: readonly string[];
}

/** network-setup's table in a family, made anew as a whole, so that running it twice leaves one set of rules. */
function nftTable(family: "ip" | "bridge", chains: readonly NftChain[]): string[] {
  const table = `table ${family} ${POD_NETWORK_TABLE}`;
  return [
    table,
    `delete ${table}`,
    `${table} {`,
    ...chains.flatMap((chain) => [
      `  chain ${chain.name} {`,
      `    type ${chain.type} hook ${chain.name} priority ${chain.priority}; policy accept;`,
      ...chain.rules.map((rule) => `    ${rule}`),
      "  }",
    ]),
    "}",
  ];
}

/** Either binding: the launcher hears DHCP from the bridge alone. */
const DHCP_FROM_THE_BRIDGE_ALONE: NftChain = {
  name: "input",
  type: "filter",
  priority: "filter",
  rules: [`udp dport ${String(DHCP_SERVER_PORT)} iifname != "${PodNetworkLinks.bridge}" drop`],
};

/**
 * The bridge's own address under the bridge binding, where the launcher answers DHCP from and reaches the guest from:
 * link-local, so it is nothing on the pod network (KubeVirt's bridge takes one of 169.254.75.0/24 too).
 */
export const BRIDGE_LAUNCHER_ADDRESS = "169.254.75.10";

/**
 * The nftables rules of the bridge binding, in the family bridge: DHCP never crosses the bridge (the guest's goes to
 * the launcher alone, and none from the pod network reaches the guest); and what the guest answers the launcher, which
 * it sends to its gateway's MAC (the launcher's address is not on its network), is taken in by the bridge rather than
 * sent on to the node. network-setup defines $bridge_mac, the bridge's MAC.
 */
function bridgeRules(): string {
  const dhcp = `udp dport { ${String(DHCP_SERVER_PORT)}, ${String(DHCP_CLIENT_PORT)} }`;
  return [
    ...nftTable("bridge", [
      {
        name: "prerouting",
        type: "filter",
        priority: "dstnat",
        rules: [
          `iifname "${POD_INTERFACE}" ${dhcp} drop`,
          `iifname "${PodNetworkLinks.tap}" ip daddr ${BRIDGE_LAUNCHER_ADDRESS} ` +
            "ether daddr set $bridge_mac meta pkttype set host",
        ],
      },
      { name: "forward", type: "filter", priority: "filter", rules: [`oifname "${POD_INTERFACE}" ${dhcp} drop`] },
    ]),
    ...nftTable("ip", [DHCP_FROM_THE_BRIDGE_ALONE]),
    "",
  ].join("\n");
}

/** The nftables rules network-setup loads for the plan. */
export function podNetworkRules(plan: PodNetworkPlan): string {
  return plan.binding === "masquerade" ? masqueradeRules(plan) : bridgeRules();
}

/**
 * What network-setup notes of the pod's interface under the bridge binding, before the guest takes its address, in
 * the launcher's state folder: the launcher answers the guest's DHCP with it.
 */
export const BRIDGED_POD_INTERFACE_NOTE = "pod-interface.json";

/** The note's content. */
export interface BridgedPodInterface {
  /** The pod's address and its prefix, as a CIDR (198.18.1.5/24), which the guest takes. */
  address: string;
  /** The pod's default gateway, empty when it has none. */
  gateway: string;
  /** The guest's MAC: the interface's own, or the pod interface's, which the guest takes. */
  guestMac: string;
  mtu: number;
}

/** The launcher pod's init container that makes the guest's way onto the pod network. */
export const NETWORK_SETUP_CONTAINER = "network-setup";

/** The variable that hands network-setup its nftables rules. */
export const NETWORK_RULES_ENV = "KUBEVIRT_TS_NETWORK_RULES";
/** The variable that names the folder network-setup notes the bridged pod interface in (the launcher's state). */
export const NETWORK_NOTES_ENV = "KUBEVIRT_TS_NETWORK_NOTES";

/** Fails network-setup with a message, on its standard error where the pod's status shows it. */
const fail = (message: string) => [`  echo "network-setup: ${message}" >&2`, "  exit 1"];

/** A MAC of the locally administered, unicast kind (02:…), at random, into the shell variable `name`. */
const randomMac = (name: string) => ["set -- $(od -An -N5 -tx1 /dev/urandom)", `${name}="02:$1:$2:$3:$4:$5"`];

/**
 * What the network-setup init container runs (/bin/sh, as root with NET_ADMIN alone, in the pod's network namespace),
 * with NETWORK_RULES_ENV the rules of podNetworkRules:
 * - masquerade: the bridge with the gateway's address, and the tap owned by the launcher's user on it. It refuses a
 *   pod whose namespace does not forward (the node's setting, which pods inherit; every Kubernetes node forwards).
 * - bridge: it notes the pod interface's address, gateway, MAC and MTU (BRIDGED_POD_INTERFACE_NOTE, in the folder of
 *   NETWORK_NOTES_ENV), takes the address off it, gives it a MAC at random (the guest takes its own, or the
 *   interface's macAddress), and puts it and the tap on the bridge, which has the launcher's link-local address, a
 *   route to the guest and the guest's MAC.
 * Both at the pod interface's MTU.
 */
export function networkSetupScript(plan: PodNetworkPlan): string {
  const { bridge, tap } = PodNetworkLinks;
  const uid = String(LAUNCHER_UID);
  const common = ["set -eu", `mtu=$(cat /sys/class/net/${POD_INTERFACE}/mtu)`];
  const tapOnBridge = [
    `ip tuntap add dev ${tap} mode tap user ${uid} group ${uid}`,
    `ip link set ${tap} mtu "$mtu" master ${bridge} up`,
  ];
  if (plan.binding === "masquerade") {
    const { gateway } = guestAddresses(plan.guestNetwork);
    return [
      ...common,
      'if [ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]; then',
      ...fail("the pod's network does not forward IPv4 (net.ipv4.ip_forward is 0 on the node)"),
      "fi",
      `ip link add ${bridge} address ${BRIDGE_MAC} type bridge`,
      `ip link set ${bridge} mtu "$mtu"`,
      `ip address add ${gateway}/${String(plan.guestNetwork.prefix)} dev ${bridge}`,
      ...tapOnBridge,
      `ip link set ${bridge} up`,
      `printf '%s' "$${NETWORK_RULES_ENV}" | nft -f -`,
    ].join("\n");
  }
  const note = `"$${NETWORK_NOTES_ENV}/${BRIDGED_POD_INTERFACE_NOTE}"`;
  return [
    ...common,
    `pod_mac=$(cat /sys/class/net/${POD_INTERFACE}/address)`,
    `guest_mac=${plan.mac ?? "$pod_mac"}`,
    // The first IPv4 address and the default route, as iproute2 prints them on one line each.
    `set -- $(ip -4 -o address show dev ${POD_INTERFACE} scope global)`,
    'address="${4:-}"',
    'if [ -z "$address" ]; then',
    ...fail(`the pod interface ${POD_INTERFACE} has no IPv4 address for the guest to take`),
    "fi",
    `set -- $(ip -4 route show default dev ${POD_INTERFACE})`,
    'gateway=""',
    'if [ "${1:-}" = default ] && [ "${2:-}" = via ]; then gateway="$3"; fi',
    `printf '{"address":"%s","gateway":"%s","guestMac":"%s","mtu":%s}\\n' "$address" "$gateway" "$guest_mac" "$mtu" \\`,
    `  > ${note}`,
    ...randomMac("pod_new_mac"),
    ...randomMac("bridge_mac"),
    `ip address flush dev ${POD_INTERFACE}`,
    `ip link set ${POD_INTERFACE} down`,
    `ip link set ${POD_INTERFACE} address "$pod_new_mac"`,
    `ip link add ${bridge} address "$bridge_mac" type bridge`,
    `ip link set ${bridge} mtu "$mtu"`,
    `ip link set ${POD_INTERFACE} master ${bridge} up`,
    ...tapOnBridge,
    `ip address add ${BRIDGE_LAUNCHER_ADDRESS}/32 dev ${bridge}`,
    `ip link set ${bridge} up`,
    `ip route add "\${address%/*}/32" dev ${bridge} src ${BRIDGE_LAUNCHER_ADDRESS}`,
    `ip neigh replace "\${address%/*}" lladdr "$guest_mac" dev ${bridge} nud permanent`,
    `{ echo "define bridge_mac = $bridge_mac"; printf '%s' "$${NETWORK_RULES_ENV}"; } | nft -f -`,
  ].join("\n");
}
