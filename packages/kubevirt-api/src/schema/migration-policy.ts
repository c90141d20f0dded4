import { z } from "zod";
import { MIGRATIONS_GROUP, MIGRATIONS_VERSION, MIGRATION_POLICY_KIND } from "../constants.ts";
import { objectMeta, quantity } from "./common.ts";

// KubeVirt's MigrationPolicy (migrations.kubevirt.io/v1alpha1): a cluster
// administrator's migration settings for the VMIs its selectors match, over
// the cluster's own (migration-policy.ts says which policy applies, and how).

const labels = z.record(z.string(), z.string());

export const migrationPolicySpec = z
  .strictObject({
    selectors: z
      .strictObject({
        namespaceSelector: labels
          .optional()
          .describe("Labels the VMI's namespace must have, every one of them (values equal)."),
        virtualMachineInstanceSelector: labels
          .optional()
          .describe("Labels the VMI must have, every one of them (values equal)."),
      })
      .describe(
        "Which VMIs the policy applies to; of the policies that match a VMI, the one matching the most labels applies.",
      ),
    allowAutoConverge: z
      .boolean()
      .optional()
      .describe("Have QEMU slow the guest's vCPUs while its memory changes faster than it is sent."),
    allowPostCopy: z
      .boolean()
      .optional()
      .describe("Switch to post-copy once the pre-copy has run past its completion time, instead of aborting."),
    allowWorkloadDisruption: z
      .boolean()
      .optional()
      .describe(
        "Whether a migration past its completion time may disrupt the guest to finish (post-copy, when " +
          "allowed) rather than be aborted; unset: as allowPostCopy.",
      ),
    bandwidthPerMigration: quantity
      .optional()
      .describe("The bandwidth one migration may use, per second (e.g. 64Mi); 0: no limit."),
    completionTimeoutPerGiB: z
      .number()
      .int()
      .optional()
      .describe(
        "Seconds a migration may take per GiB of memory and disks copied before it is " +
          "aborted or switched to post-copy; 0: no limit.",
      ),
  })
  .describe("The migration settings for the VMIs the selectors match, over the cluster's.");

export const migrationPolicy = z.object({
  apiVersion: z.literal(`${MIGRATIONS_GROUP}/${MIGRATIONS_VERSION}`),
  kind: z.literal(MIGRATION_POLICY_KIND),
  metadata: objectMeta,
  spec: migrationPolicySpec,
  status: z.object({}).nullable().optional(),
});

/**
 * KubeVirt's MigrationConfiguration, as far as a single migration goes: the cluster's, with the policy's fields over
 * it, written into the VMI's status.migrationState.migrationConfiguration when the migration is handed over.
 */
export const migrationConfiguration = z.object({
  parallelMigrationsPerCluster: z.number().int().optional(),
  parallelOutboundMigrationsPerNode: z.number().int().optional(),
  allowAutoConverge: z.boolean().optional(),
  allowPostCopy: z.boolean().optional(),
  allowWorkloadDisruption: z.boolean().optional(),
  bandwidthPerMigration: quantity.optional(),
  completionTimeoutPerGiB: z.number().int().optional(),
  progressTimeout: z.number().int().optional(),
});

export type MigrationPolicySpec = z.infer<typeof migrationPolicySpec>;
export type MigrationPolicy = z.infer<typeof migrationPolicy>;
export type MigrationConfiguration = z.infer<typeof migrationConfiguration>;
