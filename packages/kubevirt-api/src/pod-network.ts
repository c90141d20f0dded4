import type { VirtualMachineInstance } from "./schema/vmi.ts";

// The VMI's interface on the pod network: the one a port forward reaches,
// and the one whose declared ports the pod's address forwards to the guest.

type NetworkFacts = Pick<VirtualMachineInstance["spec"], "domain" | "networks">;

/** The name of the VMI's interface on the pod network, if it has one. */
export function podNetworkInterface(spec: NetworkFacts): string | undefined {
  const podNetwork = spec.networks?.find((n) => n.pod !== undefined)?.name;
  return spec.domain.devices.interfaces?.find((i) => i.name === podNetwork)?.name;
}

/** The ports the pod-network interface declares, each with its protocol (TCP unless named). */
export function podNetworkPorts(spec: NetworkFacts): { name?: string; port: number; protocol: "TCP" | "UDP" }[] {
  const name = podNetworkInterface(spec);
  const ports = spec.domain.devices.interfaces?.find((i) => i.name === name)?.ports ?? [];
  return ports.map((p) => ({
    ...(p.name !== undefined ? { name: p.name } : {}),
    port: p.port,
    protocol: p.protocol ?? "TCP",
  }));
}

/**
 * The MAC KubeVirt keeps for the masquerade binding's bridge inside the pod: node-contract's pod-network gives the
 * bridge this address, and validation refuses it for a masquerade interface.
 */
export const MASQUERADE_RESERVED_MAC = "02:00:00:00:00:00";

/** An IPv4 network and its prefix length, the network's own address (the host bits cleared). */
export interface Ipv4Network {
  address: string;
  prefix: number;
}

/** A network as its CIDR, such as 198.19.254.0/24. */
export const cidrOf = (network: Ipv4Network) => `${network.address}/${String(network.prefix)}`;

/** An IPv4 CIDR such as 198.19.254.0/24 as its network, or undefined when it is not one. */
export function parseIpv4Network(cidr: string): Ipv4Network | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((o) => o > 255) || prefix > 32) return undefined;
  const value = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  const network = prefix === 0 ? 0 : value - (value % 2 ** (32 - prefix));
  return { address: [24, 16, 8, 0].map((shift) => String(Math.floor(network / 2 ** shift) % 256)).join("."), prefix };
}

/** The launcher's operations port (its health, and the VMI's probes, which the kubelet asks there). */
export const LAUNCHER_OPS_PORT = 9102;
/** The name the launcher container gives its operations port, which its probes target. */
export const LAUNCHER_OPS_PORT_NAME = "ops";
