import { z } from "zod";
import { MIGRATION_PHASES } from "../constants.ts";
import { condition, objectMeta } from "./common.ts";

// KubeVirt's VirtualMachineInstanceMigration (kubevirt.io/v1) and the VMI's
// status.migrationState, the fields the controller and the handlers write
// while a VMI moves (their contract: migration.ts).

const time = z.string().nullable().optional();

export const migrationState = z
  .object({
    startTimestamp: time.describe(
      "When the migration began: the controller writes it when the target pod is bound to its node.",
    ),
    endTimestamp: time.describe("When the migration ended, either way: written by the handler that ended it."),
    targetNodeDomainReadyTimestamp: time.describe("When the target's handler saw the domain run on its node."),
    targetNodeDomainDetected: z.boolean().optional().describe("The target's handler has seen the domain on its node."),
    targetNodeAddress: z
      .string()
      .optional()
      .describe("The address the source's handler sends the guest to: the target handler's."),
    targetDirectMigrationNodePorts: z
      .record(z.string(), z.number().int())
      .optional()
      .describe("The ports the target's handler listens on for this migration, by the launcher's port they lead to."),
    targetNode: z.string().optional().describe("The node the VMI moves to."),
    targetPod: z.string().optional().describe("The launcher pod the VMI moves to."),
    targetAttachmentPodUID: z.string().optional(),
    sourceNode: z.string().optional().describe("The node the VMI moves from."),
    sourcePod: z.string().optional().describe("The launcher pod the VMI moves from."),
    completed: z.boolean().optional().describe("The guest runs on the target: the migration succeeded."),
    failed: z.boolean().optional().describe("The migration failed; the guest runs on where it was."),
    abortRequested: z
      .boolean()
      .optional()
      .describe(
        "The migration was cancelled (its VirtualMachineInstanceMigration deleted); the source's handler aborts it.",
      ),
    abortStatus: z
      .enum(["Succeeded", "Failed", "Aborting"])
      .optional()
      .describe("How the abort went: written by the source's handler."),
    failureReason: z.string().optional().describe("Why the migration failed, in a sentence."),
    migrationUid: z
      .string()
      .optional()
      .describe("The uid of the VirtualMachineInstanceMigration this is the state of."),
    mode: z
      .enum(["PreCopy", "PostCopy"])
      .optional()
      .describe("Whether the guest's memory is being copied before (PreCopy) or after (PostCopy) it switched."),
    migrationPolicyName: z.string().nullable().optional(),
    migrationConfiguration: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ "x-kubernetes-preserve-unknown-fields": true }),
    targetCPUSet: z.array(z.number().int()).optional(),
    targetNodeTopology: z.string().optional(),
  })
  .describe("The state of the VMI's last (or current) live migration.");

export const migrationSpec = z
  .strictObject({
    vmiName: z.string().min(1).describe("The VirtualMachineInstance to move, in the migration's namespace."),
    addedNodeSelector: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "Labels the target node must have, besides what the VMI's own nodeSelector asks: " +
          "e.g. kubernetes.io/hostname to pick the node.",
      ),
  })
  .describe("Which VMI to move live to another node, and where it may go.");

export const migrationPhaseTransitionTimestamp = z.object({
  phase: z.enum(MIGRATION_PHASES),
  phaseTransitionTimestamp: z.string(),
});

export const migrationStatus = z.object({
  phase: z.enum(MIGRATION_PHASES).optional(),
  phaseTransitionTimestamps: z.array(migrationPhaseTransitionTimestamp).optional(),
  conditions: z.array(condition).optional(),
  migrationState: migrationState.optional(),
});

export const virtualMachineInstanceMigration = z.object({
  apiVersion: z.literal("kubevirt.io/v1"),
  kind: z.literal("VirtualMachineInstanceMigration"),
  metadata: objectMeta,
  spec: migrationSpec,
  status: migrationStatus.optional(),
});

export type MigrationState = z.infer<typeof migrationState>;
export type MigrationSpec = z.infer<typeof migrationSpec>;
export type MigrationStatus = z.infer<typeof migrationStatus>;
export type VirtualMachineInstanceMigration = z.infer<typeof virtualMachineInstanceMigration>;
