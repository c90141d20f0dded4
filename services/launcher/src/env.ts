import {
  type LauncherFolder,
  type LauncherFolderEnv,
  LauncherFolders,
  LauncherEnv,
  NodeDevices,
  DEFAULT_GUEST_NETWORK,
} from "@kubevirt-ts/node-contract";
import { DEFAULT_GRACE_PERIOD_SECONDS, LAUNCHER_OPS_PORT, cidrOf, parseIpv4Network } from "@kubevirt-ts/kubevirt-api";
import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

const cidr = z.string().transform((value, ctx) => {
  const network = parseIpv4Network(value);
  if (!network) ctx.addIssue({ code: "custom", message: "must be an IPv4 CIDR such as 198.19.254.0/24" });
  return network ?? z.NEVER;
});

/** Each folder's variable (node-contract's LauncherFolders): the controller sets it; unset, the layout's own place. */
const folders: LauncherFolder[] = Object.values(LauncherFolders);
const folderEnv = Object.fromEntries(
  folders.flatMap((f) => (f.env === undefined ? [] : [[f.env, z.string().default(f.dir)]])),
) as Record<LauncherFolderEnv, z.ZodDefault<z.ZodString>>;

export const env = parseEnv(
  z.object({
    // The launcher pod's layout (node-contract's launcher-layout.ts): the controller sets each; the defaults are the
    // same layout.
    ...baseEnv(LAUNCHER_OPS_PORT),
    ...folderEnv,
    [LauncherEnv.allowEmulation]: z
      .enum(["true", "false"])
      .default("false")
      .transform((v) => v === "true"),
    [LauncherEnv.gracePeriodSeconds]: z.coerce.number().int().min(0).default(DEFAULT_GRACE_PERIOD_SECONDS),
    /** Where the kubelet puts the KVM device the handler's device plugin allocates (tests point it elsewhere). */
    KVM_DEVICE: z.string().default(NodeDevices.kvm.path),
    /** The guest network of the masquerade, which network-setup gave the pod's bridge (node-contract's pod-network). */
    [LauncherEnv.guestNetwork]: cidr.prefault(cidrOf(DEFAULT_GUEST_NETWORK)),
  }),
);
