import { LAUNCHER_OPS_PORT, MASQUERADE_RESERVED_MAC, parseIpv4Network } from "../pod-network.ts";
import type { VmiSpec } from "../schema/vmi.ts";
import type { Causes } from "./causes.ts";

const interfaceName = /^[A-Za-z0-9_-]+$/;
const macAddress = /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/;
/** A pod's port name (IANA_SVC_NAME): the launcher pod carries the interface's named ports. */
const portName = /^(?=.{1,15}$)(?=.*[a-z])(?!.*--)[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

function isIpv4Cidr(value: string): boolean {
  const network = parseIpv4Network(value);
  return network !== undefined && network.prefix >= 1 && network.prefix <= 30;
}

export function validateNetworking(spec: VmiSpec, path: string, causes: Causes): void {
  const interfaces = spec.domain.devices.interfaces ?? [];
  const networks = spec.networks ?? [];
  const ifacesPath = `${path}.domain.devices.interfaces`;
  const networksPath = `${path}.networks`;
  const networksByName = new Map(networks.map((n) => [n.name, n]));
  const interfaceNames = new Set<string>();

  interfaces.forEach((iface, i) => {
    const p = `${ifacesPath}[${i}]`;
    if (!interfaceName.test(iface.name)) {
      causes.invalid(
        `${p}.name`,
        `must consist of letters, digits, '-' and '_' only, got ${JSON.stringify(iface.name)}`,
      );
    }
    if (interfaceNames.has(iface.name)) {
      causes.duplicate(
        `${p}.name`,
        `"${iface.name}" is used by another interface; only one interface can connect to a network`,
      );
    }
    interfaceNames.add(iface.name);

    const bindings = (["masquerade", "bridge"] as const).filter((b) => iface[b] !== undefined);
    if (bindings.length !== 1) {
      causes.invalid(
        p,
        "must have exactly one binding method (masquerade or bridge); it " +
          `has ${bindings.length === 0 ? "none" : bindings.join(" and ")}`,
      );
    }
    if (!networksByName.has(iface.name)) {
      causes.notFound(
        `${p}.name`,
        `"${iface.name}" matches no network; add a network named "${iface.name}" to ${networksPath}`,
      );
    }
    if (iface.macAddress !== undefined && !macAddress.test(iface.macAddress)) {
      causes.invalid(
        `${p}.macAddress`,
        `must be a MAC address such as 02:00:00:00:00:01, got ${JSON.stringify(iface.macAddress)}`,
      );
    } else if (iface.masquerade !== undefined && iface.macAddress?.replaceAll("-", ":") === MASQUERADE_RESERVED_MAC) {
      // KubeVirt's in-pod bridge has it; refused as KubeVirt refuses it, so that a manifest valid here is valid there.
      causes.invalid(
        `${p}.macAddress`,
        `${MASQUERADE_RESERVED_MAC} is reserved for the masquerade binding's in-pod bridge in KubeVirt: ` +
          "choose another",
      );
    }
    if (iface.bootOrder !== undefined && iface.bootOrder < 1) {
      causes.invalid(`${p}.bootOrder`, `must be 1 or more when set, got ${iface.bootOrder}`);
    }
    const seen = new Set<string>();
    iface.ports?.forEach((port, j) => {
      const q = `${p}.ports[${j}]`;
      if (port.port < 1 || port.port > 65535) {
        causes.invalid(`${q}.port`, `must be between 1 and 65535, got ${port.port}`);
      } else if (port.port === LAUNCHER_OPS_PORT) {
        causes.invalid(
          `${q}.port`,
          `is ${LAUNCHER_OPS_PORT}, the launcher's own port (the kubelet asks it the VMI's probes); forward another`,
        );
      }
      const key = `${port.protocol ?? "TCP"}/${port.port}`;
      if (seen.has(key))
        causes.duplicate(`${q}.port`, `${key} is forwarded already by another entry; list each port and protocol once`);
      seen.add(key);
      if (port.name !== undefined && !portName.test(port.name)) {
        causes.invalid(
          `${q}.name`,
          "must be a port name as a pod's (at most 15 lowercase letters, digits and '-', with a letter, not " +
            `starting or ending with '-'), got ${JSON.stringify(port.name)}`,
        );
      }
    });
  });

  let podNetworks = 0;
  const networkNames = new Set<string>();
  networks.forEach((net, i) => {
    const p = `${networksPath}[${i}]`;
    if (networkNames.has(net.name)) {
      causes.duplicate(
        `${p}.name`,
        `"${net.name}" is the name of another network; each network needs a name of its own`,
      );
    }
    networkNames.add(net.name);
    if (!net.pod) {
      causes.required(`${p}.pod`, "is required: the pod network is the only network type kubevirt-ts supports");
      return;
    }
    podNetworks++;
    if (podNetworks > 1)
      causes.invalid(`${p}.pod`, "is a second pod network; a VMI connects to the pod network at most once");
    const vmNetworkCIDR = net.pod.vmNetworkCIDR;
    if (vmNetworkCIDR !== undefined && !isIpv4Cidr(vmNetworkCIDR)) {
      causes.invalid(
        `${p}.pod.vmNetworkCIDR`,
        `must be an IPv4 CIDR with a prefix of 1 to 30 bits, got ${JSON.stringify(vmNetworkCIDR)}`,
      );
    }
    if (!interfaceNames.has(net.name)) {
      causes.notFound(
        `${p}.name`,
        `"${net.name}" is used by no interface; add an interface named "${net.name}" or remove the network`,
      );
    }
  });
}
