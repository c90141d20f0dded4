import {
  type ControllerManager,
  KubeClient,
  LeaderElector,
  componentMetricsAccess,
  createRestClientMetrics,
  loadKubeConfig,
} from "@kubevirt-ts/kube";
import {
  LiveClusterConfig,
  defaultClusterConfig,
  followLogVerbosity,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { readUploadMasterKey, runService } from "@kubevirt-ts/runtime";
import { readFile } from "node:fs/promises";
import { createControllers } from "./controllers.ts";
import { env } from "./env.ts";

/**
 * A certificate file the chart mounts as optional (the dashboard's CA, absent from a user's own TLS Secret): its
 * content, or "" when it is not there. Any other failure to read it stops the controller.
 */
async function readOptionalFile(file: string): Promise<string> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw error;
  }
}

// virt-controller: the VM and VMI controllers, active in the replica that
// holds the leader lease; the other replicas keep warm caches and wait
// (the manager runs the informers in every replica, the controllers in the leader).

let controllers: ControllerManager | undefined;
// Whether this replica holds the leader lease (always, without leader election): its metrics say so.
let isLeader = !env.LEADER_ELECTION;

await runService({
  name: "virt-controller",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  checks: () => ({
    caches: () => (controllers?.hasSynced() ? undefined : "the VM, VMI and pod caches have not synced yet"),
  }),
  // /metrics only for a token allowed to get it (the chart's scraper account): the figures name every tenant's VMs.
  metricsAccess: componentMetricsAccess(loadKubeConfig(), env.METRICS_REQUIRE_AUTHORIZATION),
  start: async ({ log, registry, signal }) => {
    const client = await KubeClient.fromKubeConfig(loadKubeConfig(), createRestClientMetrics(registry));
    // The chart's values (the environment), with the KubeVirt CR over them as it changes.
    const cluster = new LiveClusterConfig(
      defaultClusterConfig({
        useEmulation: env.USE_EMULATION,
        evictionStrategy: env.EVICTION_STRATEGY,
        imagePullPolicy: env.LAUNCHER_PULL_POLICY,
        vmStateStorageClass: env.VM_STATE_STORAGE_CLASS,
        migrations: {
          parallelMigrationsPerCluster: env.PARALLEL_MIGRATIONS_PER_CLUSTER,
          parallelOutboundMigrationsPerNode: env.PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE,
          allowAutoConverge: env.MIGRATION_ALLOW_AUTO_CONVERGE,
          allowPostCopy: env.MIGRATION_ALLOW_POST_COPY,
          bandwidthPerMigration: `${String(env.MIGRATION_BANDWIDTH_MIB)}Mi`,
          completionTimeoutPerGiB: env.MIGRATION_COMPLETION_TIMEOUT_PER_GIB,
          progressTimeout: env.MIGRATION_PROGRESS_TIMEOUT_SECONDS,
        },
      }),
    );
    followLogVerbosity(cluster, "virtController", log, env.LOG_LEVEL);
    const created = createControllers({
      client,
      // Where the chart serves DataVolumes, its CRD may still be on its way: the informer waits for it.
      dataVolumes: env.IMPORTER_IMAGE !== undefined || (await client.serves(kubevirtResources.dataVolumes)),
      importer: env.IMPORTER_IMAGE
        ? {
            importerImage: env.IMPORTER_IMAGE,
            imagePullPolicy: env.LAUNCHER_PULL_POLICY,
            uploadMasterKey: await readUploadMasterKey(env.UPLOAD_MASTER_KEY_FILE ?? "", "UPLOAD_MASTER_KEY_FILE"),
          }
        : undefined,
      uploadProxyUrl: env.UPLOAD_PROXY_URL,
      dashboardCert: env.DASHBOARD_CA_FILE ? await readOptionalFile(env.DASHBOARD_CA_FILE) : undefined,
      log,
      registry,
      leading: () => isLeader,
      workers: env.WORKERS,
      launcherImage: env.LAUNCHER_IMAGE,
      cluster,
      installNamespace: env.POD_NAMESPACE,
      version: env.VERSION,
      migrationTimeouts: {
        unschedulableSeconds: env.MIGRATION_UNSCHEDULABLE_TIMEOUT_SECONDS,
        pendingSeconds: env.MIGRATION_PENDING_TIMEOUT_SECONDS,
      },
      nodeHeartbeatTimeoutMs: env.NODE_HEARTBEAT_TIMEOUT_SECONDS * 1000,
    });
    controllers = created;
    // The service aborts signal before it calls the function returned here.
    const informers = created.runInformers(signal);
    const leading = env.LEADER_ELECTION
      ? new LeaderElector({
          client,
          log,
          namespace: env.POD_NAMESPACE,
          name: "virt-controller",
          identity: env.POD_NAME,
        }).run(
          {
            onStartedLeading: (leadership) => {
              isLeader = true;
              return created.runControllers(leadership);
            },
            onStoppedLeading: () => {
              // Two leaders must never act at once: a replica that lost the lease exits and starts over as a candidate.
              if (!signal.aborted) {
                log.error("leadership lost; exiting");
                process.exit(1);
              }
            },
          },
          signal,
        )
      : created.runControllers(signal);
    return async () => {
      await Promise.all([informers, leading]);
    };
  },
});
