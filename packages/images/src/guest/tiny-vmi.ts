import { type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";

/** The tiny guest's memory and kernel boot, from its container's /boot, with a serial console: a VMI spec's domain. */
export function tinyGuestDomain() {
  return {
    memory: { guest: "128Mi" },
    firmware: {
      kernelBoot: {
        kernelArgs: "console=ttyS0 quiet",
        container: { image: "tiny:1", kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" },
      },
    },
  };
}

/**
 * A VMI that boots the tiny guest from its container's /boot (128 MiB, a serial console), with an emptyDisk
 * `scratch` (vda), a disk of the launcher pod's own: what the migration tests move from one launcher to another.
 */
export function tinyGuestVmiWithScratchDisk(uid: string): VirtualMachineInstance {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "tiny", namespace: "test", uid },
    spec: defaultVmiSpec({
      domain: {
        ...tinyGuestDomain(),
        // No pod network: the launchers under test run in the host's network, with no bridge or tap of a pod.
        devices: { disks: [{ name: "scratch", disk: { bus: "virtio" } }], autoattachPodInterface: false },
      },
      volumes: [{ name: "scratch", emptyDisk: { capacity: "16Mi" } }],
      terminationGracePeriodSeconds: 3,
    }),
  };
}
