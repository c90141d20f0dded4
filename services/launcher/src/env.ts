import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

const cidr = z
  .string()
  .regex(/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/, "must be an IPv4 CIDR such as 198.19.254.0/24")
  .transform((value) => {
    const [address = "", prefix = "24"] = value.split("/");
    return { address, prefix: Number(prefix) };
  });

export const env = parseEnv(
  z.object({
    ...baseEnv(9102),
    /** The sockets volume the handler reaches: the launcher's RPC socket, the serial console, VNC. */
    SOCKETS_DIR: z.string().default("/var/run/kubevirt-ts/sockets"),
    CONTAINER_DISKS_DIR: z.string().default("/var/run/kubevirt-ts/container-disks"),
    KERNEL_BOOT_DIR: z.string().default("/var/run/kubevirt-ts/kernel-boot"),
    /** The launcher's own writable folder: libvirt's state, overlays, seed ISOs. */
    STATE_DIR: z.string().default("/var/run/kubevirt-ts/launcher"),
    /** KubeVirt's useEmulation: run with QEMU's emulation when KVM is unusable. */
    ALLOW_EMULATION: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
    KVM_DEVICE: z.string().default("/dev/kvm"),
    /** The guest side of masquerade interfaces; kept out of the private ranges. */
    GUEST_NETWORK: cidr.prefault("198.19.254.0/24"),
    /** How long the guest has to shut down when the pod is asked to stop. */
    GRACE_PERIOD_SECONDS: z.coerce.number().int().min(0).default(30),
  }),
);
