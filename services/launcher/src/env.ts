import { LauncherDir, LauncherEnv, NodeDevices } from "@kubevirt-ts/node-contract";
import { DEFAULT_GRACE_PERIOD_SECONDS, LAUNCHER_OPS_PORT, parseIpv4Network } from "@kubevirt-ts/kubevirt-api";
import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

const cidr = z.string().transform((value, ctx) => {
  const network = parseIpv4Network(value);
  if (!network) ctx.addIssue({ code: "custom", message: "must be an IPv4 CIDR such as 198.19.254.0/24" });
  return network ?? z.NEVER;
});

export const env = parseEnv(
  z.object({
    // The launcher pod's layout (node-contract's launcher-layout.ts): the controller sets each; the defaults are the same layout.
    ...baseEnv(LAUNCHER_OPS_PORT),
    [LauncherEnv.socketsDir]: z.string().default(LauncherDir.sockets),
    [LauncherEnv.containerDisksDir]: z.string().default(LauncherDir.containerDisks),
    [LauncherEnv.kernelBootDir]: z.string().default(LauncherDir.kernelBoot),
    [LauncherEnv.cloudInitSecretsDir]: z.string().default(LauncherDir.cloudInitSecrets),
    [LauncherEnv.configVolumesDir]: z.string().default(LauncherDir.configVolumes),
    [LauncherEnv.accessCredentialsDir]: z.string().default(LauncherDir.accessCredentials),
    [LauncherEnv.claimDisksDir]: z.string().default(LauncherDir.claimDisks),
    [LauncherEnv.claimDevicesDir]: z.string().default(LauncherDir.claimDevices),
    [LauncherEnv.vmStateDir]: z.string().default(LauncherDir.vmState),
    [LauncherEnv.stateDir]: z.string().default(LauncherDir.state),
    [LauncherEnv.allowEmulation]: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
    [LauncherEnv.gracePeriodSeconds]: z.coerce.number().int().min(0).default(DEFAULT_GRACE_PERIOD_SECONDS),
    /** Where the kubelet puts the KVM device the handler's device plugin allocates (tests point it elsewhere). */
    KVM_DEVICE: z.string().default(NodeDevices.kvm.path),
    /** The guest side of masquerade interfaces; kept out of the private ranges. */
    GUEST_NETWORK: cidr.prefault("198.19.254.0/24"),
  }),
);
