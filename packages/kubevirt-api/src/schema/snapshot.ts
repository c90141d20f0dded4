import { z } from "zod";
import { condition, objectMeta, opaqueObject } from "./common.ts";
import { vmSpec, vmStatus } from "./vm.ts";

// KubeVirt's snapshot.kubevirt.io/v1beta1: VirtualMachineSnapshot (take one), VirtualMachineSnapshotContent (what was
// taken: the VM as it was and a copy of each of its disks) and VirtualMachineRestore (put one back). The names, enums
// and defaults are KubeVirt's, so a manifest or a backup tool written for KubeVirt reads the same here. A field whose
// effect kubevirt-ts does not build is left out of the schema (or its value out of the enum), so the API server
// refuses it by path (docs/adr/0002); how snapshots are taken: docs/adr/0027 and docs/data-protection.md.

export const SNAPSHOT_GROUP = "snapshot.kubevirt.io";
export const SNAPSHOT_VERSION = "v1beta1";
export const SNAPSHOT_API_VERSION = `${SNAPSHOT_GROUP}/${SNAPSHOT_VERSION}`;

export const SnapshotKind = {
  VirtualMachineSnapshot: "VirtualMachineSnapshot",
  VirtualMachineSnapshotContent: "VirtualMachineSnapshotContent",
  VirtualMachineRestore: "VirtualMachineRestore",
} as const;

export const SnapshotResource = {
  VirtualMachineSnapshot: {
    plural: "virtualmachinesnapshots",
    singular: "virtualmachinesnapshot",
    shortNames: ["vmsnapshot", "vmsnapshots"],
  },
  VirtualMachineSnapshotContent: {
    plural: "virtualmachinesnapshotcontents",
    singular: "virtualmachinesnapshotcontent",
    shortNames: ["vmsnapshotcontent", "vmsnapshotcontents"],
  },
  VirtualMachineRestore: {
    plural: "virtualmachinerestores",
    singular: "virtualmachinerestore",
    shortNames: ["vmrestore", "vmrestores"],
  },
} as const;

/** KubeVirt's default spec.failureDeadline: a snapshot not done in this time fails (and the guest is thawed). */
export const DEFAULT_SNAPSHOT_FAILURE_DEADLINE = "5m";

export const SnapshotPhase = {
  InProgress: "InProgress",
  Succeeded: "Succeeded",
  Failed: "Failed",
  Deleting: "Deleting",
  Unknown: "Unknown",
} as const;
export type SnapshotPhase = (typeof SnapshotPhase)[keyof typeof SnapshotPhase];

/** What the VM was like when it was snapshotted (status.indications). */
export const SnapshotIndication = {
  Online: "Online",
  GuestAgent: "GuestAgent",
  NoGuestAgent: "NoGuestAgent",
  QuiesceTimeout: "QuiesceTimeout",
  Paused: "Paused",
  PartialSnapshot: "PartialSnapshot",
} as const;
export type SnapshotIndication = (typeof SnapshotIndication)[keyof typeof SnapshotIndication];

/** The conditions of snapshots, contents and restores. */
export const SnapshotConditionType = { Ready: "Ready", Progressing: "Progressing", Failure: "Failure" } as const;

export const DeletionPolicy = { Delete: "Delete", Retain: "Retain" } as const;

export const TargetReadinessPolicy = {
  StopTarget: "StopTarget",
  WaitGracePeriod: "WaitGracePeriod",
  FailImmediate: "FailImmediate",
  WaitEventually: "WaitEventually",
} as const;

export const VolumeRestorePolicy = {
  RandomizeNames: "RandomizeNames",
  InPlace: "InPlace",
  PrefixTargetName: "PrefixTargetName",
} as const;

export const VolumeOwnershipPolicy = { Vm: "Vm", None: "None" } as const;

/**
 * The spec of a snapshot, a content and a restore is fixed once created, as KubeVirt's webhooks have it: a snapshot
 * whose source changed mid-way would leave the old VM marked and paused. The CRDs hold it, as a CEL transition rule.
 */
export const SPEC_IMMUTABLE = {
  rule: "self == oldSelf",
  message: "spec is immutable after creation: delete the object and create a new one with the spec you want",
} as const;

const values = <T extends Record<string, string>>(o: T) => Object.values(o) as [T[keyof T], ...T[keyof T][]];

/** A Go duration as metav1.Duration takes it: 30s, 5m, 1h30m, 1.5h. */
export const GO_DURATION_PATTERN = "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$";
/** A Go duration as KubeVirt's API takes one (30s, 5m, 1h30m). */
export const duration = z
  .string()
  .regex(new RegExp(GO_DURATION_PATTERN), "must be a duration such as 30s, 5m or 1h30m")
  .meta({ pattern: GO_DURATION_PATTERN });

const time = z.string().nullable().optional();

/** A VirtualMachine in the object's own namespace: snapshots and restores name no other kind here. */
const vmReference = (what: string) =>
  z
    .strictObject({
      apiGroup: z.enum(["kubevirt.io"]).optional().describe("kubevirt.io, the VirtualMachine's group."),
      kind: z.enum(["VirtualMachine"]).describe("VirtualMachine: the only kind kubevirt-ts snapshots and restores."),
      name: z.string().min(1).describe(`The VirtualMachine's name, in the ${what}'s namespace.`),
    })
    .describe(`The VirtualMachine the ${what} is of.`);

export const snapshotError = z
  .object({
    time: time.describe("When the error happened."),
    message: z.string().optional().describe("What went wrong, in a sentence."),
  })
  .describe("The last error met, if any.");

export const virtualMachineSnapshotSpec = z
  .strictObject({
    source: vmReference("snapshot"),
    deletionPolicy: z
      .enum(values(DeletionPolicy))
      .optional()
      .describe("What happens to the content when the snapshot is deleted: Delete (the default) or Retain."),
    failureDeadline: duration
      .optional()
      .describe(
        `How long the snapshot may take before it fails (and the guest is thawed): ` +
          `${DEFAULT_SNAPSHOT_FAILURE_DEADLINE} when unset, 0s for no limit.`,
      ),
    snapshotMode: z
      .enum(["Direct"])
      .default("Direct")
      .optional()
      .describe(
        "How a running VM is snapshotted: Direct, its file systems frozen while its disks are copied " +
          "(External, with copy-on-write overlays, is not supported).",
      ),
  })
  .describe("Which VM to snapshot, and what to do with the snapshot when it is deleted.");

export const snapshotVolumes = z
  .object({
    includedVolumes: z.array(z.string()).optional().describe("The VM's volumes the snapshot holds a copy of."),
    excludedVolumes: z
      .array(z.string())
      .optional()
      .describe("The VM's volumes not in the snapshot: those not backed by a claim (containerDisk, cloudInit, ...)."),
  })
  .describe("Which of the VM's volumes the snapshot holds.");

export const virtualMachineSnapshotStatus = z.object({
  sourceUID: z.string().optional().describe("The uid of the VirtualMachine snapshotted."),
  virtualMachineSnapshotContentName: z.string().optional().describe("The VirtualMachineSnapshotContent it made."),
  creationTime: time.describe("When the snapshot was taken: the moment its disks were captured."),
  phase: z.enum(values(SnapshotPhase)).optional().describe("InProgress, Succeeded or Failed."),
  readyToUse: z.boolean().optional().describe("Whether the snapshot can be restored."),
  error: snapshotError.optional(),
  conditions: z.array(condition).optional(),
  indications: z
    .array(z.enum(values(SnapshotIndication)))
    .optional()
    .describe("What the VM was like when it was snapshotted: Online, GuestAgent or NoGuestAgent, ..."),
  sourceIndications: z
    .array(
      z.object({
        indication: z.enum(values(SnapshotIndication)),
        message: z.string().describe("What the indication means for this snapshot."),
      }),
    )
    .optional()
    .describe("The indications, each with a sentence that explains it."),
  snapshotVolumes: snapshotVolumes.optional(),
});

export const virtualMachineSnapshot = z.object({
  apiVersion: z.literal(SNAPSHOT_API_VERSION),
  kind: z.literal(SnapshotKind.VirtualMachineSnapshot),
  metadata: objectMeta,
  spec: virtualMachineSnapshotSpec,
  status: virtualMachineSnapshotStatus.optional(),
});

/** Metadata kept as it was taken: unvalidated, its unknown fields preserved. */
const keptMetadata = objectMeta.meta({ "x-kubernetes-preserve-unknown-fields": true });

export const volumeBackup = z
  .strictObject({
    volumeName: z.string().describe("The VM volume this is a copy of."),
    persistentVolumeClaim: z
      .strictObject({
        metadata: keptMetadata.optional().describe("The source claim's metadata (name, labels, annotations)."),
        spec: opaqueObject.optional().describe("The source claim's spec, which a restored claim is made from."),
      })
      .describe("The claim the volume was backed by, as it was."),
    volumeSnapshotName: z
      .string()
      .optional()
      .describe(
        "Where the copy is: a VolumeSnapshot of this name where the storage has CSI snapshots, " +
          "else a claim of this name in the content's namespace (docs/adr/0027).",
      ),
  })
  .describe("A copy of one of the VM's volumes.");

export const virtualMachineSnapshotContentSpec = z
  .strictObject({
    virtualMachineSnapshotName: z.string().optional().describe("The VirtualMachineSnapshot this is the content of."),
    source: z
      .strictObject({
        virtualMachine: z
          .strictObject({
            metadata: keptMetadata
              .optional()
              .describe("The VM's name, namespace, uid, generation, labels and annotations."),
            spec: vmSpec,
            status: vmStatus.optional(),
          })
          .optional()
          .describe("The VirtualMachine as it was snapshotted."),
      })
      .describe("What was snapshotted."),
    volumeBackups: z.array(volumeBackup).optional().describe("A copy of each volume the snapshot includes."),
  })
  .describe("What a VirtualMachineSnapshot took: the VM as it was, and where each of its disks' copies is.");

export const volumeSnapshotStatus = z.object({
  volumeSnapshotName: z.string().describe("The copy (a VolumeSnapshot or a claim) this is the state of."),
  creationTime: time,
  readyToUse: z.boolean().optional(),
  error: snapshotError.optional(),
});

export const virtualMachineSnapshotContentStatus = z.object({
  creationTime: time.describe("When the disks were captured."),
  readyToUse: z.boolean().optional().describe("Whether every copy is complete."),
  error: snapshotError.optional(),
  volumeSnapshotStatus: z.array(volumeSnapshotStatus).optional().describe("The state of each volume's copy."),
  snapshotMode: z.enum(["Direct"]).optional().describe("How the snapshot was taken."),
});

export const virtualMachineSnapshotContent = z.object({
  apiVersion: z.literal(SNAPSHOT_API_VERSION),
  kind: z.literal(SnapshotKind.VirtualMachineSnapshotContent),
  metadata: objectMeta,
  spec: virtualMachineSnapshotContentSpec,
  status: virtualMachineSnapshotContentStatus.optional(),
});

export const virtualMachineRestoreSpec = z
  .strictObject({
    target: vmReference("restore"),
    virtualMachineSnapshotName: z.string().min(1).describe("The VirtualMachineSnapshot to restore, in this namespace."),
    targetReadinessPolicy: z
      .enum(values(TargetReadinessPolicy))
      .default(TargetReadinessPolicy.WaitGracePeriod)
      .optional()
      .describe(
        "What to do while the target VM runs: StopTarget, WaitGracePeriod (5m), FailImmediate, WaitEventually.",
      ),
    volumeRestorePolicy: z
      .enum(values(VolumeRestorePolicy))
      .optional()
      .describe("How restored claims are named: RandomizeNames (the default), InPlace or PrefixTargetName."),
    volumeOwnershipPolicy: z
      .enum(values(VolumeOwnershipPolicy))
      .optional()
      .describe("Who owns the restored claims: the VM (Vm, the default) or no one (None)."),
    volumeRestoreOverrides: z
      .array(
        z.strictObject({
          volumeName: z.string().optional().describe("The VM volume this override is for."),
          restoreName: z.string().optional().describe("The restored claim's name."),
          labels: z.record(z.string(), z.string()).optional().describe("Labels for the restored claim."),
          annotations: z.record(z.string(), z.string()).optional().describe("Annotations for the restored claim."),
        }),
      )
      .optional()
      .describe("Per volume: the restored claim's name, labels and annotations."),
    patches: z
      .array(z.string())
      .optional()
      .describe("JSON patches, each a string, applied to a new target VM before it is created."),
  })
  .describe("Which snapshot to restore, onto which VM.");

export const volumeRestore = z.object({
  volumeName: z.string(),
  persistentVolumeClaim: z.string().describe("The restored claim."),
  volumeSnapshotName: z.string().describe("The copy it was restored from."),
  dataVolumeName: z.string().optional(),
});

export const virtualMachineRestoreStatus = z.object({
  restores: z.array(volumeRestore).optional().describe("Each volume restored, and its claim."),
  restoreTime: time.describe("When the restore completed."),
  deletedDataVolumes: z.array(z.string()).optional().describe("The DataVolumes the restore deleted."),
  complete: z.boolean().optional().describe("Whether the restore is done."),
  conditions: z.array(condition).optional(),
});

export const virtualMachineRestore = z.object({
  apiVersion: z.literal(SNAPSHOT_API_VERSION),
  kind: z.literal(SnapshotKind.VirtualMachineRestore),
  metadata: objectMeta,
  spec: virtualMachineRestoreSpec,
  status: virtualMachineRestoreStatus.optional(),
});

export type VirtualMachineSnapshotSpec = z.infer<typeof virtualMachineSnapshotSpec>;
export type VirtualMachineSnapshotStatus = z.infer<typeof virtualMachineSnapshotStatus>;
export type VirtualMachineSnapshot = z.infer<typeof virtualMachineSnapshot>;
export type VolumeBackup = z.infer<typeof volumeBackup>;
export type VirtualMachineSnapshotContentSpec = z.infer<typeof virtualMachineSnapshotContentSpec>;
export type VirtualMachineSnapshotContentStatus = z.infer<typeof virtualMachineSnapshotContentStatus>;
export type VirtualMachineSnapshotContent = z.infer<typeof virtualMachineSnapshotContent>;
export type VirtualMachineRestoreSpec = z.infer<typeof virtualMachineRestoreSpec>;
export type VirtualMachineRestoreStatus = z.infer<typeof virtualMachineRestoreStatus>;
export type VirtualMachineRestore = z.infer<typeof virtualMachineRestore>;
export type SnapshotError = z.infer<typeof snapshotError>;
