import { hostname } from "node:os";
import { DEFAULT_HEARTBEAT_TIMEOUT_SECONDS } from "@kubevirt-ts/node-contract";
import {
  DEFAULT_COMPLETION_TIMEOUT_PER_GIB,
  DEFAULT_PROGRESS_TIMEOUT_SECONDS,
  DEFAULT_PARALLEL_MIGRATIONS_PER_CLUSTER,
  DEFAULT_PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE,
  EVICTION_STRATEGIES,
} from "@kubevirt-ts/kubevirt-api";
import {
  DEFAULT_PENDING_TARGET_TIMEOUT_SECONDS,
  DEFAULT_UNSCHEDULABLE_TARGET_TIMEOUT_SECONDS,
} from "@kubevirt-ts/vm-rules";
import { baseEnv, metricsAuthorizationEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

export const env = parseEnv(
  z
    .object({
      ...baseEnv(9100),
      ...metricsAuthorizationEnv,
      LAUNCHER_IMAGE: z
        .string()
        .min(1, "must name the virt-launcher image, e.g. kubevirt-ts.local/virt-launcher:<tag>"),
      LAUNCHER_PULL_POLICY: z.enum(["Always", "IfNotPresent", "Never"]).default("IfNotPresent"),
      /** This replica's name in leader election: its pod's name. */
      POD_NAME: z.string().min(1).default(hostname()),
      /** Where the leader election Lease lives: the controller's own namespace. */
      POD_NAMESPACE: z.string().min(1).default("kubevirt-ts"),
      LEADER_ELECTION: z
        .enum(["true", "false"])
        .default("true")
        .transform((v) => v === "true"),
      WORKERS: z.coerce.number().int().min(1).max(64).default(3),
      /** KubeVirt's useEmulation: let guests run with QEMU's emulation where KVM is unusable. */
      USE_EMULATION: z
        .enum(["true", "false"])
        .default("false")
        .transform((v) => v === "true"),
      /**
       * kubevirt-ts serves DataVolumes itself (the chart's dataVolumes.serve, where CDI is not installed): its importer
       * image.
       */
      IMPORTER_IMAGE: z.string().optional(),
      /**
       * The upload master key's file (the chart's Secret kubevirt-ts-upload-master-key), each upload pod's key derived
       * from it: needed with IMPORTER_IMAGE.
       */
      UPLOAD_MASTER_KEY_FILE: z.string().min(1).optional(),
      /**
       * The dashboard's external address, which forwards CDI's upload paths: CDIConfig's status.uploadProxyURL where
       * kubevirt-ts serves DataVolumes (the chart's, from web.tls.hosts and the NodePort).
       */
      UPLOAD_PROXY_URL: z
        .url({ protocol: /^https$/ })
        .max(2048)
        .optional(),
      /**
       * The file of the certificate that verifies UPLOAD_PROXY_URL (the chart mounts the dashboard's CA): exports'
       * external links carry it, so virtctl vmexport download verifies the dashboard. Unset or empty: the system's
       * roots (a certificate from a public CA).
       */
      DASHBOARD_CA_FILE: z.string().optional(),
      /**
       * The cluster's eviction strategy, for VMIs that name none: KubeVirt's CR setting, the chart's evictionStrategy.
       */
      EVICTION_STRATEGY: z.enum(EVICTION_STRATEGIES).default("None"),
      /**
       * The StorageClass of VMs' backend-storage claims: KubeVirt's vmStateStorageClass, the chart's. Empty: KubeVirt's
       * rule.
       */
      /** KubeVirt's MigrationConfiguration: migrations in flight in the cluster, and out of one node. */
      PARALLEL_MIGRATIONS_PER_CLUSTER: z.coerce.number().int().min(1).default(DEFAULT_PARALLEL_MIGRATIONS_PER_CLUSTER),
      PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE: z.coerce
        .number()
        .int()
        .min(1)
        .default(DEFAULT_PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE),
      /**
       * How long a migration's target pod may be unschedulable, and pending for any reason, before the migration fails
       * (KubeVirt's 5 and 15 minutes).
       */
      MIGRATION_UNSCHEDULABLE_TIMEOUT_SECONDS: z.coerce
        .number()
        .int()
        .min(1)
        .default(DEFAULT_UNSCHEDULABLE_TARGET_TIMEOUT_SECONDS),
      MIGRATION_PENDING_TIMEOUT_SECONDS: z.coerce.number().int().min(1).default(DEFAULT_PENDING_TARGET_TIMEOUT_SECONDS),
      /**
       * How long a node's handler may go without a heartbeat before the node is unschedulable (KubeVirt's 5 min; chart:
       * nodeHeartbeat.timeoutSeconds).
       */
      NODE_HEARTBEAT_TIMEOUT_SECONDS: z.coerce.number().int().min(1).default(DEFAULT_HEARTBEAT_TIMEOUT_SECONDS),
      // The rest of the cluster's migration configuration, as KubeVirt's, which each migration's MigrationPolicy may
      // override.
      MIGRATION_ALLOW_POST_COPY: z
        .enum(["true", "false"])
        .default("false")
        .transform((v) => v === "true"),
      MIGRATION_ALLOW_AUTO_CONVERGE: z
        .enum(["true", "false"])
        .default("false")
        .transform((v) => v === "true"),
      /** MiB/s; 0: unlimited. */
      MIGRATION_BANDWIDTH_MIB: z.coerce.number().int().min(0).default(0),
      /** 0: no limit. */
      MIGRATION_COMPLETION_TIMEOUT_PER_GIB: z.coerce.number().int().min(0).default(DEFAULT_COMPLETION_TIMEOUT_PER_GIB),
      /** Seconds without progress before a migration is aborted; 0: no limit. */
      MIGRATION_PROGRESS_TIMEOUT_SECONDS: z.coerce.number().int().min(0).default(DEFAULT_PROGRESS_TIMEOUT_SECONDS),
      VM_STATE_STORAGE_CLASS: z
        .string()
        .optional()
        .transform((v) => (v === "" ? undefined : v)),
      /** The version the KubeVirt CR's status reports: the chart's appVersion. */
      VERSION: z.string().default("dev"),
    })
    .refine((e) => e.IMPORTER_IMAGE === undefined || e.UPLOAD_MASTER_KEY_FILE !== undefined, {
      path: ["UPLOAD_MASTER_KEY_FILE"],
      message:
        "must name the upload master key's file when IMPORTER_IMAGE is set (the chart mounts its Secret " +
        "kubevirt-ts-upload-master-key at /etc/kubevirt-ts/upload-master-key/key)",
    }),
);
