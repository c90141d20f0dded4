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
  return ports.map((p) => ({ ...(p.name !== undefined ? { name: p.name } : {}), port: p.port, protocol: p.protocol ?? "TCP" }));
}

/** The lowest port an unprivileged process may bind; the launcher pod lowers it when the guest takes a port below it. */
export const UNPRIVILEGED_PORT_START = 1024;
