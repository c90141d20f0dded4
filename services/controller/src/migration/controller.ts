import {
  EXPECTATIONS_RECHECK_MS,
  type EventRecorder,
  type Expectations,
  type Informer,
  type KubeClient,
  type KubeObject,
  type PersistentVolumeClaim,
  type Pod,
  type Reconcile,
  WrittenVersions,
  addFinalizer,
  isNotFound,
  removeFinalizer,
  resources,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  Finalizer,
  Label,
  type MigrationConfiguration,
  MigrationPhase,
  type MigrationPolicy,
  type MigrationState,
  type MigrationStatus,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_PODS_BY_VMI, isLauncherPodOf, launcherPodsKeyOf } from "@kubevirt-ts/node-contract";
import {
  isFinalMigrationPhase,
  launcherPodRoles,
  matchMigrationPolicy,
  migrationConfigurationFor,
  migrationJobOf,
} from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";
import { claimsOf } from "../vmi/claim-events.ts";
import { launcherDisruptionBudgetName } from "../vmi/disruption-budget.ts";
import type { LauncherPodConfig } from "../vmi/pod.ts";
import { type MigrationDecision, type MigrationTimeouts, decideMigration } from "./decide.ts";
import { MIGRATIONS_BY_VMI } from "./evacuation.ts";
import { migrationTargetPod } from "./target-pod.ts";

// The VirtualMachineInstanceMigration controller: the target pod, the
// hand-over to the handlers, the migration's phase from what they write in
// the VMI, timeouts, cancellation by deletion, and KubeVirt's limits on
// migrations in flight (vm-rules' migration.ts has the contract).

/** The cluster's migration configuration: its parallel limits and what a matching MigrationPolicy overrides. */
export type ClusterMigrationConfiguration = MigrationConfiguration & {
  parallelMigrationsPerCluster: number;
  parallelOutboundMigrationsPerNode: number;
};

export interface MigrationConfig {
  timeouts: MigrationTimeouts;
  /**
   * The cluster's migration configuration (KubeVirt's MigrationConfiguration): its parallel limits (migrations in
   * flight, past Pending and not ended, in the cluster and out of one node), and what a matching MigrationPolicy
   * overrides.
   */
  cluster: () => ClusterMigrationConfiguration;
}

export interface MigrationControllerDeps {
  client: KubeClient;
  migrations: Informer<VirtualMachineInstanceMigration>;
  vmis: Informer<VirtualMachineInstance>;
  pods: Informer<Pod>;
  claims: Informer<PersistentVolumeClaim>;
  policies: Informer<MigrationPolicy>;
  /** A node's labels from the nodes' cache: a host-model VMI's target must run its source node's host model. */
  nodeLabels?: (nodeName: string) => Record<string, string> | undefined;
  expectations: Expectations;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
  /** The launcher pod's configuration now (it follows the KubeVirt CR). */
  pod: () => LauncherPodConfig;
  config: MigrationConfig;
}

const vmiKeyOf = (m: VirtualMachineInstanceMigration) => `${m.metadata.namespace ?? ""}/${m.spec.vmiName}`;

/** How many ended migrations of a VMI are kept, the newest, as KubeVirt's garbage collection keeps them. */
export const ENDED_MIGRATIONS_KEPT = 5;

/** The ended migrations of a VMI past the newest ENDED_MIGRATIONS_KEPT, which go. */
export function endedMigrationsToDelete(
  migrations: readonly VirtualMachineInstanceMigration[],
): VirtualMachineInstanceMigration[] {
  const ended = migrations.filter((m) => isFinalMigrationPhase(m.status?.phase) && !m.metadata.deletionTimestamp);
  return ended
    .sort((a, b) => (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? ""))
    .slice(ENDED_MIGRATIONS_KEPT);
}

export function createMigrationReconciler(deps: MigrationControllerDeps): Reconcile {
  const { client, migrations, vmis, pods, expectations, recorder, now } = deps;
  // Migrations this process started whose start the cache may not show yet, so two workers never exceed the limits.
  const started = new Set<string>();

  const inFlight = (m: VirtualMachineInstanceMigration) =>
    started.has(m.metadata.uid ?? "") ||
    (!isFinalMigrationPhase(m.status?.phase) && (m.status?.phase ?? MigrationPhase.Pending) !== MigrationPhase.Pending);

  /**
   * Why this migration waits in Pending (another of its VMI's, or the parallel limits), or undefined when it may start.
   */
  function held(
    migration: VirtualMachineInstanceMigration,
    vmi: VirtualMachineInstance,
    otherTargets: readonly Pod[],
  ): string | undefined {
    const [other] = otherTargets;
    if (other)
      return (
        `VMI ${migration.spec.vmiName} has another migration in flight (target ` +
        `pod ${other.metadata.name ?? ""}); this one waits for it to end`
      );
    const flying = migrations.list().filter((m) => m.metadata.uid !== migration.metadata.uid && inFlight(m));
    const cluster = deps.config.cluster();
    const limits = {
      perCluster: cluster.parallelMigrationsPerCluster,
      outboundPerNode: cluster.parallelOutboundMigrationsPerNode,
    };
    if (flying.length >= limits.perCluster)
      return (
        `${String(flying.length)} migrations are in flight in the cluster, the most at once ` +
        `(parallelMigrationsPerCluster ${String(limits.perCluster)}); this one waits`
      );
    const node = vmi.status?.nodeName;
    const outbound = flying.filter((m) => vmis.get(vmiKeyOf(m))?.status?.nodeName === node).length;
    if (node && outbound >= limits.outboundPerNode)
      return (
        `${String(outbound)} migrations are in flight out of node ${node}, the most at once ` +
        `(parallelOutboundMigrationsPerNode ${String(limits.outboundPerNode)}); this one waits`
      );
    return undefined;
  }

  /** Two pods of the VMI protected while it moves, one otherwise, when it has a disruption budget (KubeVirt's). */
  async function protectBoth(
    vmi: VirtualMachineInstance,
    migration: VirtualMachineInstanceMigration | undefined,
  ): Promise<void> {
    const name = launcherDisruptionBudgetName(vmi);
    const patch = {
      metadata: { labels: { [Label.MigrationName]: migration?.metadata.name ?? null } },
      spec: { minAvailable: migration ? 2 : 1 },
    };
    await client
      .patch(resources.podDisruptionBudgets, vmi.metadata.namespace, name, patch, "merge")
      .catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
  }

  /**
   * A hand-over with the configuration its migration runs with, as KubeVirt's controller hands it over: the cluster's,
   * under the MigrationPolicy that matches the VMI and its namespace (vm-rules' migration-policy.ts).
   */
  async function configured(decision: MigrationDecision, vmi: VirtualMachineInstance): Promise<MigrationDecision> {
    if (decision.targetNodeLabel === undefined || !decision.vmiState) return decision;
    const namespace = await client.find<KubeObject>(resources.namespaces, undefined, vmi.metadata.namespace ?? "");
    const policy = matchMigrationPolicy(deps.policies.list(), vmi.metadata.labels, namespace?.metadata.labels);
    const state: MigrationState = { ...decision.vmiState, ...migrationConfigurationFor(deps.config.cluster(), policy) };
    const event =
      state.migrationPolicyName === undefined || decision.event
        ? {}
        : {
            event: {
              type: "Normal" as const,
              reason: "MigrationPolicy",
              message: `The migration runs under MigrationPolicy ${state.migrationPolicyName}`,
            },
          };
    return { ...decision, vmiState: state, status: { ...decision.status, migrationState: state }, ...event };
  }

  async function writeVmiState(
    vmi: VirtualMachineInstance,
    state: MigrationState,
    targetNode: string | undefined,
  ): Promise<void> {
    await writeStatusIfChanged(
      client,
      kubevirtResources.virtualMachineInstances,
      vmi,
      { ...vmi.status, migrationState: state },
      targetNode ? { [Label.MigrationTargetNodeName]: targetNode } : undefined,
    );
  }

  /** KubeVirt's garbage collection: a VMI keeps its newest ended migrations (and their finalizers go with them). */
  async function collectEnded(migration: VirtualMachineInstanceMigration, status: MigrationStatus): Promise<void> {
    // The cache may not show this one ended yet.
    const ofVmi = migrations
      .byIndex(MIGRATIONS_BY_VMI, vmiKeyOf(migration))
      .map((m) => (m.metadata.uid === migration.metadata.uid ? { ...m, status } : m));
    for (const old of endedMigrationsToDelete(ofVmi)) {
      await client
        .delete(kubevirtResources.virtualMachineInstanceMigrations, old.metadata.namespace, old.metadata.name ?? "", {
          uid: old.metadata.uid,
        })
        .catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
    }
  }

  // KubeVirt's mutator labels a new migration with its VMI's name, which virtctl migrate-cancel selects; kubevirt-ts's
  // own components create theirs labelled, and one made elsewhere (or before the label) gets it here.
  const withVmiNameLabel = async (migration: VirtualMachineInstanceMigration) =>
    migration.metadata.labels?.[Label.MigrationVmiName] === migration.spec.vmiName
      ? migration
      : client.patch<VirtualMachineInstanceMigration>(
          kubevirtResources.virtualMachineInstanceMigrations,
          migration.metadata.namespace,
          migration.metadata.name ?? "",
          { metadata: { labels: { [Label.MigrationVmiName]: migration.spec.vmiName } } },
          "merge",
        );

  const written = new WrittenVersions();
  return async (key) => {
    const cached = migrations.get(key);
    if (!cached) {
      expectations.deleteExpectations(key);
      written.forget(key);
      return undefined;
    }
    // Our own last write has not reached the cache yet: its watch event brings the migration back here.
    if (written.isStale(key, cached.metadata.resourceVersion)) return undefined;
    const uid = cached.metadata.uid ?? "";
    // Past Pending in the cache: the cache counts it from now on.
    if ((cached.status?.phase ?? MigrationPhase.Pending) !== MigrationPhase.Pending) started.delete(uid);
    if (!expectations.satisfied(key)) return { requeueAfterMs: EXPECTATIONS_RECHECK_MS };
    const migration = cached.metadata.deletionTimestamp
      ? cached
      : await withVmiNameLabel(
          await addFinalizer(client, kubevirtResources.virtualMachineInstanceMigrations, cached, Finalizer.Migration),
        );
    const vmi = vmis.get(vmiKeyOf(migration));
    const owned = vmi
      ? pods.byIndex(LAUNCHER_PODS_BY_VMI, launcherPodsKeyOf(vmi)).filter((p) => isLauncherPodOf(p, vmi))
      : [];
    const roles = vmi ? launcherPodRoles(vmi, owned) : { current: [], targets: [], left: [] };
    // Its target pods: never one the VMI runs in now (a completed migration's target is the VMI's pod from then on).
    const targetPods = roles.targets.filter((p) => migrationJobOf(p) === uid);
    const decided = decideMigration({
      migration,
      vmi,
      sourcePod: roles.current.find((p) => !p.metadata.deletionTimestamp),
      targetPods,
      held: vmi
        ? held(
            migration,
            vmi,
            roles.targets.filter((p) => migrationJobOf(p) !== uid && !p.metadata.deletionTimestamp),
          )
        : undefined,
      timeouts: deps.config.timeouts,
      now: now(),
    });
    const decision = vmi ? await configured(decided, vmi) : decided;

    if (decision.createTargetPod && vmi) {
      started.add(uid);
      expectations.expectCreations(key, 1);
      try {
        const pod = await client.create<Pod>(
          resources.pods,
          vmi.metadata.namespace,
          migrationTargetPod(
            vmi,
            migration,
            deps.pod(),
            claimsOf(vmi, deps.claims),
            deps.nodeLabels?.(vmi.status?.nodeName ?? ""),
          ),
        );
        recorder.record(
          migration,
          "Normal",
          "SuccessfulCreate",
          `Created the migration target pod ${pod.metadata.name ?? ""}`,
        );
      } catch (error) {
        started.delete(uid);
        expectations.creationObserved(key);
        throw error;
      }
      await protectBoth(vmi, migration);
    }
    for (const pod of decision.deleteTargetPods ?? []) {
      await client
        .delete(resources.pods, pod.metadata.namespace, pod.metadata.name ?? "", { uid: pod.metadata.uid })
        .catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
    }
    if (decision.vmiState && vmi) await writeVmiState(vmi, decision.vmiState, decision.targetNodeLabel);
    const ended = isFinalMigrationPhase(decision.status.phase) && !isFinalMigrationPhase(migration.status?.phase);
    if (vmi && (ended || decision.release)) await protectBoth(vmi, undefined);
    if (decision.event) recorder.record(migration, decision.event.type, decision.event.reason, decision.event.message);
    if (decision.release) {
      await removeFinalizer(
        client,
        kubevirtResources.virtualMachineInstanceMigrations,
        migration,
        Finalizer.Migration,
      ).catch((error: unknown) => {
        // Let go already, by an earlier pass whose write the cache had not shown yet.
        if (!isNotFound(error)) throw error;
      });
      return undefined;
    }
    const updated = await writeStatusIfChanged(
      client,
      kubevirtResources.virtualMachineInstanceMigrations,
      migration,
      decision.status,
    ).catch((error: unknown) => {
      // Deleted meanwhile: its deletion brings it back here.
      if (!isNotFound(error)) throw error;
      return undefined;
    });
    if (updated) written.wrote(key, cached.metadata.resourceVersion, migration.metadata.resourceVersion);
    else if (migration !== cached) written.wrote(key, cached.metadata.resourceVersion);
    if (ended) await collectEnded(migration, decision.status);
    return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : undefined;
  };
}
