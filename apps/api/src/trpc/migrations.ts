import {
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  dnsLabelProblem,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { isFinalMigrationPhase, migrationRefusal } from "@kubevirt-ts/vm-rules";
import { MIGRATION_REPORT_RETENTION_MS, type MigrationReport } from "@kubevirt-ts/launcher-protocol";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { tokenRequester } from "../access.ts";
import type { HandlerDialer } from "../handler-dialer.ts";
import { requestMigration } from "../vm-actions.ts";
import { router, userProcedure } from "./init.ts";
import { MAX_LISTED, bounded, newestFirst } from "./namespace-lists.ts";
import { fromRefusal } from "./refusal.ts";

// A VM's live migrations for the dashboard: Migrate (to any node, or to one
// by name: KubeVirt's addedNodeSelector on kubernetes.io/hostname), Cancel
// (the migration deleted, which aborts it), and the VM's migrations with
// their progress: phases from the objects, and the latest one's figures
// from the handler of the node it left (what KubeVirt's
// kubevirt_vmi_migration_* metrics give). Migrate is the migrate
// subresource's own implementation (vm-actions.ts); listing and cancelling
// are the user's own requests, the figures asked only once the user could
// list the migrations.

const dnsName = z.string().superRefine((value, ctx) => {
  const problem = dnsLabelProblem(value);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});
const vm = z.object({ namespace: dnsName, name: dnsName });

/** The most migrations in flight whose figures one answer asks the handlers for (KubeVirt runs 5 at a time). */
const MAX_FIGURES = 10;

/** A migration as the dashboard shows it: its phase and when it reached each, where it goes, how it ended. */
function migrationView(m: VirtualMachineInstanceMigration) {
  const state = m.status?.migrationState;
  return {
    name: m.metadata.name ?? "",
    created: m.metadata.creationTimestamp ?? "",
    phase: m.status?.phase ?? "Pending",
    phases: (m.status?.phaseTransitionTimestamps ?? []).map((t) => ({
      phase: t.phase,
      time: t.phaseTransitionTimestamp,
    })),
    ended: isFinalMigrationPhase(m.status?.phase),
    cancelling: m.metadata.deletionTimestamp !== undefined && m.metadata.deletionTimestamp !== null,
    sourceNode: state?.sourceNode,
    targetNode: state?.targetNode,
    mode: state?.mode,
    failureReason: state?.failureReason,
    /** The MigrationPolicy whose settings it runs with, when one changed the cluster's. */
    policy: state?.migrationPolicyName ?? undefined,
    evacuation: m.metadata.annotations?.["kubevirt.io/evacuationMigration"],
  };
}

/**
 * The figures of a migration as its source's handler last read them from libvirt's job: how much was sent and is left,
 * at what rate, the pass over memory; once it ended, the switch-over's real downtime.
 */
function progressView(report: MigrationReport) {
  const p = report.status.progress;
  return {
    observed: report.observed,
    phase: report.status.phase,
    elapsedMs: p?.elapsedMs,
    dataTotal: p?.dataTotal,
    dataProcessed: p?.dataProcessed,
    dataRemaining: p?.dataRemaining,
    memoryBytesPerSecond: p?.memoryBps,
    iteration: p?.iteration,
    // While it runs, libvirt's figure is the downtime QEMU expects; only a completed job's is the real one.
    downtimeMs: report.status.phase === "Completed" ? p?.downtimeMs : undefined,
    expectedDowntimeMs: report.status.phase === "Running" ? p?.downtimeMs : undefined,
  };
}

/**
 * The latest migration's figures from the handler of the node it left: none before it starts sending (or once that
 * handler forgot), a problem when that handler cannot be asked.
 */
async function progressOf(
  handlers: HandlerDialer,
  m: VirtualMachineInstanceMigration,
): Promise<{ progress?: ReturnType<typeof progressView>; progressProblem?: string }> {
  const state = m.status?.migrationState;
  const uid = state?.migrationUid ?? m.metadata.uid;
  if (!state?.sourceNode || uid === undefined) return {};
  // A migration that ended before the handler's retention has no figures left there: not asked again every second.
  const ended = state.endTimestamp ? Date.parse(state.endTimestamp) : undefined;
  if (ended !== undefined && Date.now() - ended > MIGRATION_REPORT_RETENTION_MS) return {};
  try {
    const report = await handlers.migrationReport(state.sourceNode, uid);
    return report ? { progress: progressView(report) } : {};
  } catch (error) {
    return {
      progressProblem:
        "the figures of the migration are " + `unavailable: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

const migrationsOf = async (client: Parameters<typeof tokenRequester>[0], namespace: string, name: string) =>
  (
    await client.list<VirtualMachineInstanceMigration>(kubevirtResources.virtualMachineInstanceMigrations, namespace)
  ).items.filter((m) => m.spec.vmiName === name);

export const migrations = router({
  // targetNode: the node to move to (its kubernetes.io/hostname label); any node the scheduler picks when unset.
  migrate: userProcedure
    .input(vm.extend({ targetNode: z.string().min(1).max(253).optional() }))
    .mutation(async ({ ctx, input }) => {
      const addedNodeSelector =
        input.targetNode === undefined ? undefined : { "kubernetes.io/hostname": input.targetNode };
      const name = await requestMigration(ctx, tokenRequester(ctx.client), input, () =>
        Promise.resolve(addedNodeSelector ? { addedNodeSelector } : {}),
      ).catch(fromRefusal);
      return { name };
    }),
  // Deleting the VM's migrations in flight cancels them: the controller asks the source's handler to abort.
  cancel: userProcedure.input(vm).mutation(async ({ ctx, input }) => {
    const flying = (await migrationsOf(ctx.client, input.namespace, input.name)).filter(
      (m) => !isFinalMigrationPhase(m.status?.phase) && !m.metadata.deletionTimestamp,
    );
    if (flying.length === 0)
      throw new TRPCError({ code: "CONFLICT", message: `${input.name} has no migration in flight to cancel.` });
    for (const m of flying)
      await ctx.client.delete(
        kubevirtResources.virtualMachineInstanceMigrations,
        input.namespace,
        m.metadata.name ?? "",
        { uid: m.metadata.uid },
      );
    return { cancelled: flying.map((m) => m.metadata.name ?? "") };
  }),
  // The migrations of a namespace, or of every namespace for who may list them there, newest first: at most
  // MAX_LISTED, each with its namespace and VM; those in flight with figures from the handlers of the nodes they left.
  all: userProcedure.input(z.object({ namespace: dnsName.optional() })).query(async ({ ctx, input }) => {
    const { items, truncated } = await bounded((options) =>
      ctx.client.list<VirtualMachineInstanceMigration>(
        kubevirtResources.virtualMachineInstanceMigrations,
        input.namespace,
        options,
      ),
    );
    const listed = newestFirst(items).slice(0, MAX_LISTED);
    const flying = new Set(listed.filter((m) => !isFinalMigrationPhase(m.status?.phase)).slice(0, MAX_FIGURES));
    const migrations = await Promise.all(
      listed.map(async (m) => ({
        namespace: m.metadata.namespace ?? "",
        vm: m.spec.vmiName,
        ...migrationView(m),
        ...(flying.has(m) ? await progressOf(ctx.handlers, m) : {}),
      })),
    );
    return { migrations, truncated: truncated || items.length > listed.length };
  }),
  // The VM's migrations, newest first, and whether it could be migrated now (and why not).
  list: userProcedure.input(vm).query(async ({ ctx, input }) => {
    const [list, vmi] = await Promise.all([
      migrationsOf(ctx.client, input.namespace, input.name),
      ctx.client.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, input.namespace, input.name),
    ]);
    const refusal = vmi ? migrationRefusal(vmi) : `${input.name} is not running`;
    const newest = [...list].sort((a, b) =>
      (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? ""),
    );
    const figures = newest[0] ? await progressOf(ctx.handlers, newest[0]) : {};
    return {
      migrations: newest.map((m, i) => ({ ...migrationView(m), ...(i === 0 ? figures : {}) })),
      migratable: refusal === undefined ? { available: true as const } : { available: false as const, reason: refusal },
      node: vmi?.status?.nodeName,
    };
  }),
});
