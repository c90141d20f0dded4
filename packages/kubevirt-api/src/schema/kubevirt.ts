import { z } from "zod";
import { EVICTION_STRATEGIES, GROUP, KUBEVIRT_KIND, VERSION } from "../constants.ts";
import { condition, objectMeta, quantity } from "./common.ts";
import { duration } from "./snapshot.ts";

// KubeVirt's KubeVirt CR (kubevirt.io/v1), the part kubevirt-ts acts on: the
// cluster's live configuration. Every field here has its effect (the
// components watch the CR and apply a change without a restart,
// cluster-config.ts); anything else KubeVirt's CR has is refused by path
// (the schemas are strict), as for VMs. The operator's own fields (image
// registry and tag, infra and workload placement, customizeComponents)
// have no meaning without KubeVirt's operator: Helm installs kubevirt-ts.

const verbosity = z.number().int().min(0).max(9);

export const logVerbosity = z
  .strictObject({
    virtAPI: verbosity
      .optional()
      .describe("virt-api's log verbosity (0-9, KubeVirt's 2 by default): 4 and above log at debug level."),
    virtController: verbosity.optional().describe("virt-controller's log verbosity (0-9)."),
    virtHandler: verbosity.optional().describe("virt-handler's log verbosity (0-9)."),
    virtLauncher: verbosity
      .optional()
      .describe(
        "The verbosity of the launchers started from now on (0-9); a VM's logVerbosity label wins for its own.",
      ),
    virtOperator: verbosity
      .optional()
      .describe(
        "Kept for virtctl adm log-verbosity, which sets it with the others: " +
          "kubevirt-ts has no operator, Helm installs it.",
      ),
  })
  .describe("Log verbosity per component, KubeVirt's klog levels: applied live.");

export const developerConfiguration = z
  .strictObject({
    featureGates: z
      .array(z.string().max(128))
      .max(128)
      .optional()
      .describe("KubeVirt's feature gates; kubevirt-ts warns of each it has no gated feature for (cluster-config.ts)."),
    useEmulation: z
      .boolean()
      .optional()
      .describe(
        "Let guests run with QEMU's software emulation where a node has no usable KVM; off, " +
          "every launcher pod requests devices.kubevirt.io/kvm.",
      ),
    memoryOvercommit: z
      .number()
      .int()
      .min(10)
      .max(1000)
      .optional()
      .describe(
        "The guest's memory against its launcher pod's request, in percent " +
          "(KubeVirt's 100): 150 requests two thirds of it.",
      ),
    cpuAllocationRatio: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe("vCPUs per requested CPU of a launcher pod that asks for none itself (KubeVirt's 10: 100m per vCPU)."),
    logVerbosity: logVerbosity.optional(),
  })
  .describe("KubeVirt's developer configuration.");

export const kubeVirtMigrations = z
  .strictObject({
    parallelMigrationsPerCluster: z.number().int().min(1).optional(),
    parallelOutboundMigrationsPerNode: z.number().int().min(1).optional(),
    allowAutoConverge: z.boolean().optional(),
    allowPostCopy: z.boolean().optional(),
    bandwidthPerMigration: quantity
      .optional()
      .describe("The bandwidth one migration may use per second (e.g. 64Mi); 0: no limit."),
    completionTimeoutPerGiB: z.number().int().min(0).optional(),
    progressTimeout: z.number().int().min(0).optional(),
  })
  .describe("The cluster's migration settings, which a MigrationPolicy may override for the VMIs it selects.");

const pullPolicy = z.enum(["Always", "IfNotPresent", "Never"]);

export const kubeVirtConfiguration = z
  .strictObject({
    developerConfiguration: developerConfiguration.optional(),
    evictionStrategy: z
      .enum(EVICTION_STRATEGIES)
      .optional()
      .describe("What an eviction of a launcher pod does, for VMIs that name no evictionStrategy."),
    migrations: kubeVirtMigrations.optional(),
    machineType: z
      .string()
      .max(64)
      .optional()
      .describe(
        "Deprecated in KubeVirt for architectureConfiguration.amd64.machineType: the " +
          "machine type of VMIs that name none.",
      ),
    architectureConfiguration: z
      .strictObject({
        defaultArchitecture: z.literal("amd64").optional().describe("amd64: the only architecture kubevirt-ts runs."),
        amd64: z
          .strictObject({
            machineType: z.string().max(64).optional().describe("The machine type of amd64 VMIs that name none (q35)."),
          })
          .optional(),
      })
      .optional(),
    cpuModel: z
      .string()
      .max(64)
      .optional()
      .describe("The CPU model of VMIs that name none (a libvirt model, host-model or host-passthrough)."),
    defaultRuntimeClass: z.string().max(253).optional().describe("The RuntimeClass of every launcher pod."),
    vmRolloutStrategy: z
      .literal("Stage")
      .optional()
      .describe(
        "Stage: a change to a running VM's template takes effect at its next start (LiveUpdate " +
          "needs hotplug, which kubevirt-ts does not have).",
      ),
    imagePullPolicy: pullPolicy
      .optional()
      .describe("The pull policy of the launcher image (the importer's is the chart's image.pullPolicy)."),
    vmStateStorageClass: z
      .string()
      .max(253)
      .optional()
      .describe("The StorageClass of VMs' backend-storage claims (persistent EFI variables and TPM state)."),
  })
  .describe("The cluster's configuration: applied live by every component.");

export const kubeVirtSpec = z
  .strictObject({
    configuration: kubeVirtConfiguration.default({}).describe("The cluster's configuration."),
    imagePullPolicy: pullPolicy
      .optional()
      .describe(
        "In KubeVirt the components' pull policy; in kubevirt-ts (installed by Helm) that of the " +
          "launcher image when configuration.imagePullPolicy is unset.",
      ),
    // KubeVirt's shipped kubevirt-cr.yaml writes these empty: accepted empty, refused by path with content.
    certificateRotateStrategy: z
      .strictObject({})
      .optional()
      .describe("Only {}: the chart makes and renews the certificates."),
    customizeComponents: z.strictObject({}).optional().describe("Only {}: the chart's values shape the components."),
    workloadUpdateStrategy: z
      .strictObject({
        workloadUpdateMethods: z
          .array(z.enum(["LiveMigrate", "Evict"]))
          .max(2)
          .optional()
          .describe(
            "How VMs whose launcher image is outdated after an upgrade are moved onto the new one: LiveMigrate " +
              "migrates those that can be, Evict evicts the others' launcher pods (their VM starts them again). " +
              "Empty: none is moved; they are only labelled kubevirt.io/outdatedLauncherImage.",
          ),
        batchEvictionSize: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .optional()
          .describe("How many launcher pods are evicted per batchEvictionInterval (default 10)."),
        batchEvictionInterval: duration
          .optional()
          .describe("The wait between two batches of evictions, a duration such as 1m (the default)."),
      })
      .optional()
      .describe("Whether and how running VMs are moved onto the launcher of an upgrade."),
  })
  .describe("The KubeVirt installation's settings.");

export const kubeVirtStatus = z
  .object({
    phase: z.enum(["", "Deploying", "Deployed", "Deleting", "Deleted"]).optional(),
    conditions: z.array(condition).optional(),
    observedGeneration: z.number().int().optional(),
    observedKubeVirtVersion: z.string().optional(),
    targetKubeVirtVersion: z.string().optional(),
    operatorVersion: z.string().optional(),
    defaultArchitecture: z.string().optional(),
    outdatedVirtualMachineInstanceWorkloads: z
      .number()
      .int()
      .optional()
      .describe("The running VMIs whose launcher image is not the installed one."),
  })
  .describe("How the installation is: its components' readiness, from virt-controller.");

export const kubeVirt = z.object({
  apiVersion: z.literal(`${GROUP}/${VERSION}`),
  kind: z.literal(KUBEVIRT_KIND),
  metadata: objectMeta,
  spec: kubeVirtSpec,
  status: kubeVirtStatus.optional(),
});

export type KubeVirtSpec = z.infer<typeof kubeVirtSpec>;
export type KubeVirtConfiguration = z.infer<typeof kubeVirtConfiguration>;
export type KubeVirtStatus = z.infer<typeof kubeVirtStatus>;
export type KubeVirt = z.infer<typeof kubeVirt>;
