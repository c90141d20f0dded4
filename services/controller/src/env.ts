import { hostname } from "node:os";
import { EVICTION_STRATEGIES } from "@kubevirt-ts/kubevirt-api";
import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

export const env = parseEnv(
  z.object({
    ...baseEnv(9100),
    LAUNCHER_IMAGE: z.string().min(1, "must name the virt-launcher image, e.g. kubevirt-ts.local/virt-launcher:<tag>"),
    LAUNCHER_PULL_POLICY: z.enum(["Always", "IfNotPresent", "Never"]).default("IfNotPresent"),
    /** This replica's name in leader election: its pod's name. */
    POD_NAME: z.string().min(1).default(hostname()),
    /** Where the leader election Lease lives: the controller's own namespace. */
    POD_NAMESPACE: z.string().min(1).default("kubevirt-ts"),
    LEADER_ELECTION: z.enum(["true", "false"]).default("true").transform((v) => v === "true"),
    WORKERS: z.coerce.number().int().min(1).max(64).default(3),
    /** KubeVirt's useEmulation: let guests run with QEMU's emulation where KVM is unusable. */
    USE_EMULATION: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
    /** kubevirt-ts serves DataVolumes itself (the chart's dataVolumes.serve, where CDI is not installed): its importer image. */
    IMPORTER_IMAGE: z.string().optional(),
    /** The cluster's eviction strategy, for VMIs that name none: KubeVirt's CR setting, the chart's evictionStrategy. */
    EVICTION_STRATEGY: z.enum(EVICTION_STRATEGIES).default("None"),
    /** The StorageClass of VMs' backend-storage claims: KubeVirt's vmStateStorageClass, the chart's. Empty: KubeVirt's rule. */
    VM_STATE_STORAGE_CLASS: z.string().optional().transform((v) => (v === "" ? undefined : v)),
  }),
);
