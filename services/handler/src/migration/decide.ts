import {
  DEFAULT_COMPLETION_TIMEOUT_PER_GIB,
  DEFAULT_PROGRESS_TIMEOUT_SECONDS,
  type MigrationState,
  migrationConfiguration,
} from "@kubevirt-ts/kubevirt-api";
import { MIGRATION_ABORTED_REASON, bandwidthMiB, switchesToPostCopy } from "@kubevirt-ts/vm-rules";
import type { DomainStatus, MigrationOptions, MigrationStatus } from "@kubevirt-ts/launcher-protocol";

export type { MigrationState };

// What each handler does for a live migration, decided from the VMI's
// status.migrationState (written by the controller and the two handlers)
// and what the launcher says: pure functions, the wiring (wiring.ts) only
// carries their steps out. The contract, as KubeVirt's and vm-rules'
// migration.ts: the target node's handler prepares the target launcher,
// opens its proxy to it and writes targetNodeAddress; the source node's
// handler then opens its proxy, has the source launcher migrate, and writes
// mode, then completed or failed with endTimestamp; abortRequested makes it
// abort, and it writes abortStatus.

/** The VMI's migration state, if it has one. */
export function migrationStateOf(vmi: { status?: unknown }): MigrationState | undefined {
  const status = vmi.status as { migrationState?: MigrationState } | undefined;
  return status?.migrationState;
}

const ended = (state: MigrationState) => state.completed === true || state.failed === true;

/** The patch's fields that differ from the state, or undefined when none does. */
export function changes(state: MigrationState, patch: Partial<MigrationState>): Partial<MigrationState> | undefined {
  const changed = Object.entries(patch).filter(
    ([key, value]) => JSON.stringify(state[key as keyof MigrationState]) !== JSON.stringify(value),
  );
  return changed.length === 0 ? undefined : Object.fromEntries(changed);
}

export interface TargetInput {
  state: MigrationState | undefined;
  nodeName: string;
  /** Whether the migration's target pod runs on this node (its launcher container started). */
  targetPodRunning: boolean;
  /** The target launcher's migration status; undefined before it was asked. */
  launcher: MigrationStatus | undefined;
  /** Where this handler's migration proxy listens. */
  proxy: { address: string; port: number };
  now: Date;
}

export interface TargetStep {
  /** Call prepareMigrationTarget on the target launcher. */
  prepare?: true;
  /** Let the migration's connections through the proxy to the target pod (idempotent). */
  allow?: true;
  /** The migration has ended: no more of its connections through the proxy. */
  release?: true;
  patch?: Partial<MigrationState>;
}

/** The target handler's next step for a migration whose targetNode is its node. */
export function targetStep(input: TargetInput): TargetStep {
  const { state, launcher } = input;
  if (!state?.migrationUid || state.targetNode !== input.nodeName) return {};
  if (ended(state)) {
    // The domain runs here once completed: say it was seen, once.
    const patch =
      state.completed === true && launcher?.phase === "Completed"
        ? changes(state, { targetNodeDomainDetected: true })
        : undefined;
    return {
      release: true,
      ...(patch ? { patch: { ...patch, targetNodeDomainReadyTimestamp: input.now.toISOString() } } : {}),
    };
  }
  if (!input.targetPodRunning) return {};
  if (launcher === undefined || launcher.phase === "None") return { prepare: true, allow: true };
  if (launcher.phase === "Completed") {
    const patch = changes(state, { targetNodeDomainDetected: true });
    return {
      allow: true,
      ...(patch ? { patch: { ...patch, targetNodeDomainReadyTimestamp: input.now.toISOString() } } : {}),
    };
  }
  const patch = changes(state, {
    targetNodeAddress: input.proxy.address,
    targetDirectMigrationNodePorts: { [String(input.proxy.port)]: 0 },
  });
  return { allow: true, ...(patch ? { patch } : {}) };
}

/** The target handler's address as the source reads it from the state: its address and its migration port. */
export function targetProxyAddress(state: MigrationState): { host: string; port: number } | undefined {
  const port = Number(Object.keys(state.targetDirectMigrationNodePorts ?? {})[0]);
  if (!state.targetNodeAddress || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  return { host: state.targetNodeAddress, port };
}

/**
 * The launcher's options for a migration: the configuration the controller handed it over with (the cluster's, under
 * the MigrationPolicy that matched), as KubeVirt's handler reads it; KubeVirt's defaults where it has none.
 */
export function migrationOptionsOf(state: MigrationState): Omit<MigrationOptions, "migrationUid"> {
  const parsed = migrationConfiguration.safeParse(state.migrationConfiguration ?? {});
  if (!parsed.success)
    throw new Error(
      "the VMI's status.migrationState.migrationConfiguration is not KubeVirt's " +
        `MigrationConfiguration: ${parsed.error.message}`,
    );
  const configuration = parsed.data;
  return {
    postCopy: switchesToPostCopy(configuration),
    autoConverge: configuration.allowAutoConverge === true,
    bandwidthMiB: bandwidthMiB(configuration.bandwidthPerMigration),
    completionTimeoutPerGiB: configuration.completionTimeoutPerGiB ?? DEFAULT_COMPLETION_TIMEOUT_PER_GIB,
    progressTimeout: configuration.progressTimeout ?? DEFAULT_PROGRESS_TIMEOUT_SECONDS,
    allowNonSharedDisks: false,
  };
}

export interface SourceInput {
  state: MigrationState | undefined;
  nodeName: string;
  /** The source launcher's migration status (its last outgoing migration). */
  launcher: MigrationStatus;
  now: Date;
}

export interface SourceStep {
  /** Open the proxy sockets in the source pod's folder to the target handler (idempotent). */
  proxy?: "start" | "stop";
  call?: { method: "migrate"; options: MigrationOptions } | { method: "abortMigration" };
  patch?: Partial<MigrationState>;
}

/** The source handler's next step for a migration whose sourceNode is its node. */
export function sourceStep(input: SourceInput): SourceStep {
  const { state, launcher } = input;
  if (!state?.migrationUid || state.sourceNode !== input.nodeName) return {};
  if (ended(state)) return { proxy: "stop" };
  const mine = launcher.migrationUid === state.migrationUid;
  const end = (fields: Partial<MigrationState>): SourceStep => {
    const patch = changes(state, { ...fields, endTimestamp: launcher.endTimestamp ?? input.now.toISOString() });
    return { proxy: "stop", ...(patch ? { patch } : {}) };
  };
  if (!mine) {
    // Cancelled before it started: nothing moved.
    if (state.abortRequested === true)
      return end({ failed: true, failureReason: MIGRATION_ABORTED_REASON, abortStatus: "Succeeded" });
    if (!targetProxyAddress(state)) return {};
    return {
      proxy: "start",
      call: { method: "migrate", options: { ...migrationOptionsOf(state), migrationUid: state.migrationUid } },
    };
  }
  switch (launcher.phase) {
    case "Completed":
      return end({
        completed: true,
        ...(launcher.mode ? { mode: launcher.mode } : {}),
        ...(state.abortRequested === true ? { abortStatus: "Failed" as const } : {}),
      });
    case "Failed": {
      const aborted = launcher.abortStatus === "Succeeded";
      return end({
        failed: true,
        failureReason: aborted ? MIGRATION_ABORTED_REASON : (launcher.failureReason ?? "Live migration failed"),
        ...(aborted ? { abortStatus: "Succeeded" as const } : {}),
      });
    }
    default: {
      const abort = state.abortRequested === true && launcher.abortStatus === undefined;
      const patch = changes(state, {
        ...(launcher.mode ? { mode: launcher.mode } : {}),
        ...(state.abortRequested === true ? { abortStatus: "Aborting" as const } : {}),
      });
      return {
        proxy: "start",
        ...(abort ? { call: { method: "abortMigration" as const } } : {}),
        ...(patch ? { patch } : {}),
      };
    }
  }
}

/** The VMI's status with its migration state patched. */
export function withMigrationState<S extends object | undefined>(
  status: S,
  state: MigrationState | undefined,
  patch: Partial<MigrationState> | undefined,
): S {
  if (!state || !patch) return status;
  const patched: object = { ...status, migrationState: { ...state, ...patch } };
  return patched as S;
}

/** Whether the source's launcher reports a domain that left for the migration's target (not a guest that stopped). */
export const migratedAway = (domain: DomainStatus): boolean => domain.reason === "Migrated";
