// The node devices a launcher may be given, as KubeVirt's: the handler's
// device plugins serve each as the extended resource devices.kubevirt.io/<name>
// (services/handler/src/device-plugin), and the controller asks for them in
// the launcher pod's limits.

/** A device of the node, at the same path on the node and in the launcher's container. */
export interface NodeDevice {
  /** The resource is devices.kubevirt.io/<name>. */
  name: string;
  path: string;
}

export const DEVICE_RESOURCE_NAMESPACE = "devices.kubevirt.io";

/** KubeVirt's permanent device plugins: KVM for the guest's CPU; tun and vhost-net for tap-backed networks. */
export const NodeDevices = {
  kvm: { name: "kvm", path: "/dev/kvm" },
  tun: { name: "tun", path: "/dev/net/tun" },
  vhostNet: { name: "vhost-net", path: "/dev/vhost-net" },
} as const satisfies Record<string, NodeDevice>;

export const deviceResourceName = (device: NodeDevice) => `${DEVICE_RESOURCE_NAMESPACE}/${device.name}`;

/**
 * The devices a launcher pod's container asks for, in its limits, as KubeVirt's renderresources: KVM unless emulation
 * is allowed (with emulation allowed the guest is emulated, on a node with KVM as well); tun where the guest has an
 * interface on the pod network, whose tap network-setup makes and QEMU opens. No vhost-net: the guest's network is
 * QEMU's own virtio backend.
 */
export function launcherDeviceLimits(options: { allowEmulation: boolean; tap: boolean }): Record<string, string> {
  return {
    ...(options.allowEmulation ? {} : { [deviceResourceName(NodeDevices.kvm)]: "1" }),
    ...(options.tap ? { [deviceResourceName(NodeDevices.tun)]: "1" } : {}),
  };
}
