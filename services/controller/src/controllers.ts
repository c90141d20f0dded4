import {
  ControllerManager,
  type EndpointSlice,
  type EventHandler,
  Expectations,
  type Informer,
  type KubeClient,
  type KubeObject,
  type Node,
  type PersistentVolumeClaim,
  type Pod,
  type WorkQueue,
  createEventRecorder,
  keyOf,
  resources,
} from "@kubevirt-ts/kube";
import {
  type DataVolume,
  Kind,
  type LiveClusterConfig,
  type MigrationPolicy,
  Label,
  LabelValue,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  CLONE_KIND,
  EXPORT_KIND,
  SnapshotKind,
  type VirtualMachineClone,
  type VirtualMachineExport,
  type VirtualMachineRestore,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import {
  DEFAULT_HEARTBEAT_TIMEOUT_SECONDS,
  EXPORT_SERVICE_LABEL,
  LAUNCHER_PODS_BY_VMI,
  launcherPodIndex,
} from "@kubevirt-ts/node-contract";
import { migrationJobOf } from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";
import type { Registry } from "prom-client";
import { controllerOf } from "./common/owner.ts";
import { registerCdiConfig } from "./datavolume/cdi-config.ts";
import { registerSnapshotController, snapshotIndexers } from "./snapshot/controller.ts";
import { CLONES_BY_VM, clonesByVm, createCloneReconciler } from "./clone/controller.ts";
import {
  EXPORTS_BY_SERVICE,
  EXPORTS_BY_SOURCE,
  SLICES_BY_SERVICE,
  createExportReconciler,
  exportsByService,
  exportsBySource,
  slicesByService,
} from "./export/controller.ts";
import { createDataVolumeReconciler } from "./datavolume/controller.ts";
import type { ImporterConfig } from "./datavolume/importer-pod.ts";
import { type MigrationConfig, createMigrationReconciler } from "./migration/controller.ts";
import { MIGRATIONS_BY_VMI, createEvacuationReconciler, migrationsByVmi } from "./migration/evacuation.ts";
import { VMIS_BY_NODE, createNodeReconciler, vmisByNode } from "./node/controller.ts";
import { createVmReconciler } from "./vm/controller.ts";
import { createVmiReconciler } from "./vmi/controller.ts";
import { registerClusterMetrics } from "./vmi/cluster-metrics.ts";
import { registerWorkloadUpdater } from "./workload-update/controller.ts";
import { observePhaseTransitions } from "./vmi/phase-metrics.ts";
import { BY_CLAIM, claimEvents, podsByClaim, vmisByClaim, vmsByClaim } from "./vmi/claim-events.ts";
import { VMIS_BY_UID, launcherPodEvents, unownedLauncherPods, vmisByUid } from "./vmi/pod-events.ts";
import type { LauncherPodConfig } from "./vmi/pod.ts";
import { followKubeVirt, registerKubeVirtStatus } from "./kubevirt/controller.ts";
import {
  RESTORES_BY_SNAPSHOT,
  RESTORES_BY_TARGET,
  createRestoreReconciler,
  restoreOfDataVolume,
  restoresBySnapshot,
  restoresByTarget,
  restoresIn,
} from "./restore/controller.ts";

// The controller process: informers for VMs, VMIs, launcher pods and claims that
// only enqueue keys, and the VM and VMI controllers working off two queues.
// Every cached object is also looked at again every resync period, so that
// whatever state the cluster is in, the controllers converge from it.

/** KubeVirt's informers resync too; here every few minutes, with no change needed. */
const RESYNC_MS = 5 * 60_000;

export interface ControllersConfig {
  client: KubeClient;
  log: Logger;
  registry: Registry;
  /** Whether this replica leads now (default: always); only the leader reports what its caches hold. */
  leading?: () => boolean;
  workers: number;
  launcherImage: string;
  /**
   * The cluster's configuration (the chart's values with the KubeVirt CR over them), read on every reconcile: with
   * `installNamespace`, the controllers follow the CR there and the leader writes its status.
   */
  cluster: LiveClusterConfig;
  /**
   * The release namespace, where the KubeVirt CR and the components' workloads are; unset (tests), no CR is followed.
   */
  installNamespace?: string | undefined;
  /** The version the KubeVirt CR's status reports (the chart's appVersion). */
  version?: string;
  /** Whether the cluster serves DataVolumes (CDI's, or kubevirt-ts's own): the controllers then watch them. */
  dataVolumes: boolean;
  /**
   * Whether the snapshot controller runs (it does unless false): tests that stand in for it with snapshots of their
   * own turn it off.
   */
  snapshots?: boolean;
  /** Where kubevirt-ts serves DataVolumes itself (no CDI): its importer, and the DataVolume controller runs. */
  importer?: ImporterConfig | undefined;
  /**
   * The dashboard's external address: CDIConfig's status.uploadProxyURL where kubevirt-ts serves DataVolumes, and where
   * exports' external links point (virt-api's export proxy behind the dashboard).
   */
  uploadProxyUrl?: string | undefined;
  /** The PEM certificate that verifies the dashboard's address, handed out with exports' external links. */
  dashboardCert?: string | undefined;
  /** KubeVirt's target pods' timeouts (the chart's; its other migration settings are the cluster configuration's). */
  migrationTimeouts: MigrationConfig["timeouts"];
  /**
   * How long a node's handler may go without a heartbeat before the node is unschedulable and its orphaned VMIs Failed
   * (KubeVirt's 5 min).
   */
  nodeHeartbeatTimeoutMs?: number;
  /** Watch one namespace only (tests); all namespaces when unset. */
  namespace?: string;
  /** How often every VM, VMI and launcher pod is looked at again without a change (tests shorten it). */
  resyncMs?: number;
  now?: () => Date;
}

/** Enqueues the key of the object, or of its controlling owner of the given kind. */
function enqueueOwner<T extends KubeObject>(
  queue: WorkQueue,
  kind: string,
  onEvent?: (ownerKey: string, type: "add" | "delete") => void,
): EventHandler<T> {
  const ownerKey = (object: T) => {
    const ref = controllerOf(object);
    return ref?.kind === kind ? `${object.metadata.namespace ?? ""}/${ref.name}` : undefined;
  };
  const enqueue = (object: T, type?: "add" | "delete") => {
    const key = ownerKey(object);
    if (key === undefined) return;
    if (type) onEvent?.(key, type);
    queue.add(key);
  };
  return {
    add: (o) => {
      enqueue(o, "add");
    },
    update: (previous, current) => {
      enqueue(current);
      if (ownerKey(previous) !== ownerKey(current)) enqueue(previous);
    },
    delete: (o) => {
      enqueue(o, "delete");
    },
  };
}

/** Enqueues the keys `keysOf` finds for the object (those of the objects its event concerns). */
export function enqueueKeys<T extends KubeObject>(
  queue: WorkQueue,
  keysOf: (object: T) => readonly string[],
): EventHandler<T> {
  const enqueue = (object: T) => {
    for (const key of keysOf(object)) queue.add(key);
  };
  return {
    add: enqueue,
    update: (_, o) => {
      enqueue(o);
    },
    delete: enqueue,
  };
}

function enqueueSelf<T extends KubeObject>(queue: WorkQueue): EventHandler<T> {
  return {
    add: (o) => {
      queue.add(keyOf(o));
    },
    update: (_, o) => {
      queue.add(keyOf(o));
    },
    delete: (o) => {
      queue.add(keyOf(o));
    },
  };
}

/** The index of migrations by uid, namespace/uid: a target pod's label names its migration's. */
const MIGRATIONS_BY_UID = "uid";

/** Enqueues the migration a target pod is labelled with; its arrival meets the migration's expectation of it. */
function targetPodEvents(
  queue: WorkQueue,
  migrations: Informer<VirtualMachineInstanceMigration>,
  expectations: Expectations,
): EventHandler<Pod> {
  const enqueue = (pod: Pod, added: boolean) => {
    const uid = migrationJobOf(pod);
    if (uid === undefined) return;
    for (const m of migrations.byIndex(MIGRATIONS_BY_UID, `${pod.metadata.namespace ?? ""}/${uid}`)) {
      if (added) expectations.creationObserved(keyOf(m));
      queue.add(keyOf(m));
    }
  };
  return {
    add: (pod) => {
      enqueue(pod, true);
    },
    update: (_, pod) => {
      enqueue(pod, false);
    },
    delete: (pod) => {
      enqueue(pod, false);
    },
  };
}

/** The VM and VMI controllers and their informers; the manager runs them (its controllers only in the leader). */
export function createControllers(config: ControllersConfig): ControllerManager {
  const { client, log, registry, workers } = config;
  const now = config.now ?? (() => new Date());
  const manager = new ControllerManager({ log, registry });
  const vmQueue = manager.queue("virtualmachines");
  const vmiQueue = manager.queue("virtualmachineinstances");
  const vmExpectations = new Expectations();
  const vmiExpectations = new Expectations();
  const recorder = createEventRecorder(client, "virt-controller", log);

  const { namespace } = config;
  const resyncMs = config.resyncMs ?? RESYNC_MS;
  const vms = manager.informer<VirtualMachine>({
    client,
    type: kubevirtResources.virtualMachines,
    namespace,
    resyncMs,
    indexers: { [BY_CLAIM]: vmsByClaim },
  });
  const vmis = manager.informer<VirtualMachineInstance>({
    client,
    type: kubevirtResources.virtualMachineInstances,
    namespace,
    resyncMs,
    indexers: { [VMIS_BY_UID]: vmisByUid, [BY_CLAIM]: vmisByClaim, [VMIS_BY_NODE]: vmisByNode },
  });
  const pods = manager.informer<Pod>({
    client,
    type: resources.pods,
    namespace,
    resyncMs,
    labelSelector: `${Label.App}=${LabelValue.Launcher}`,
    indexers: { [LAUNCHER_PODS_BY_VMI]: launcherPodIndex, [BY_CLAIM]: podsByClaim },
  });
  const claims = manager.informer<PersistentVolumeClaim>({
    client,
    type: resources.persistentVolumeClaims,
    namespace,
    resyncMs,
  });
  const dataVolumes = config.dataVolumes
    ? manager.informer<DataVolume>({ client, type: kubevirtResources.dataVolumes, namespace, resyncMs })
    : undefined;
  const migrations = manager.informer<VirtualMachineInstanceMigration>({
    client,
    type: kubevirtResources.virtualMachineInstanceMigrations,
    namespace,
    resyncMs,
    indexers: {
      [MIGRATIONS_BY_VMI]: migrationsByVmi,
      [MIGRATIONS_BY_UID]: (m) => [`${m.metadata.namespace ?? ""}/${m.metadata.uid ?? ""}`],
    },
  });
  // Cluster-scoped: the nodes, whose handlers' heartbeats and CPU labels the node and migration controllers read.
  const nodes = manager.informer<Node>({ client, type: resources.nodes, resyncMs });
  // Cluster-scoped: the migration settings of the VMIs they select, read when a migration is handed over.
  const policies = manager.informer<MigrationPolicy>({ client, type: kubevirtResources.migrationPolicies, resyncMs });
  const unowned = unownedLauncherPods({ client, pods, vmis, recorder, log, registry });
  // The configuration each reconcile reads: the KubeVirt CR's, followed live, over the chart's values.
  const live = config.cluster;
  if (config.installNamespace !== undefined) {
    const kvs = followKubeVirt(manager, client, config.installNamespace, live, resyncMs);
    registerKubeVirtStatus(manager, kvs, {
      client,
      namespace: config.installNamespace,
      live,
      version: config.version ?? "dev",
      log,
      now,
    });
    registerWorkloadUpdater(manager, kvs, {
      client,
      namespace: config.installNamespace,
      vmis,
      migrations,
      pods,
      recorder,
      parallelMigrations: () => live.get().migrations.parallelMigrationsPerCluster,
      log,
      now,
    });
  }
  const pod = (): LauncherPodConfig => {
    const c = live.get();
    return {
      launcherImage: config.launcherImage,
      imagePullPolicy: c.imagePullPolicy,
      allowEmulation: c.useEmulation,
      evictionStrategy: c.evictionStrategy,
      cpuAllocationRatio: c.cpuAllocationRatio,
      memoryOvercommit: c.memoryOvercommit,
      ...(c.defaultRuntimeClass !== undefined ? { runtimeClassName: c.defaultRuntimeClass } : {}),
      ...(c.logVerbosity.virtLauncher !== undefined ? { launcherVerbosity: c.logVerbosity.virtLauncher } : {}),
    };
  };

  vms.addHandler(enqueueSelf<VirtualMachine>(vmQueue));
  vmis.addHandler(enqueueSelf<VirtualMachineInstance>(vmiQueue));
  vmis.addHandler(
    enqueueOwner<VirtualMachineInstance>(vmQueue, Kind.VirtualMachine, (key, type) => {
      if (type === "add") vmExpectations.creationObserved(key);
      else vmExpectations.deletionObserved(key);
    }),
  );
  pods.addHandler(launcherPodEvents(vmiQueue, vmis, vmiExpectations));
  pods.addHandler(unowned.handler);
  claims.addHandler(claimEvents(vmiQueue, vmis));
  claims.addHandler(claimEvents(vmQueue, vms));
  // A DataVolume's claim has its name, so the claims' index finds the VMIs and VMs that name it.
  dataVolumes?.addHandler(claimEvents<VirtualMachineInstance, DataVolume>(vmiQueue, vmis));
  dataVolumes?.addHandler(claimEvents<VirtualMachine, DataVolume>(vmQueue, vms));

  // Migrations: a migration, its VMI and its target pod each make it look again; a VMI and its migrations, its
  // evacuation.
  const migrationQueue = manager.queue("virtualmachineinstancemigrations");
  const evacuationQueue = manager.queue("evacuation");
  const migrationExpectations = new Expectations();
  const evacuationExpectations = new Expectations();
  migrations.addHandler(enqueueSelf<VirtualMachineInstanceMigration>(migrationQueue));
  const migrationsOfVmi = (vmi: VirtualMachineInstance) => {
    for (const m of migrations.byIndex(MIGRATIONS_BY_VMI, keyOf(vmi))) migrationQueue.add(keyOf(m));
  };
  vmis.addHandler({
    add: migrationsOfVmi,
    update: (_, vmi) => {
      migrationsOfVmi(vmi);
    },
    delete: migrationsOfVmi,
  });
  pods.addHandler(targetPodEvents(migrationQueue, migrations, migrationExpectations));
  vmis.addHandler(enqueueSelf<VirtualMachineInstance>(evacuationQueue));
  const evacuationOf = (m: VirtualMachineInstanceMigration, added: boolean) => {
    const [key = ""] = migrationsByVmi(m);
    if (added) evacuationExpectations.creationObserved(key);
    evacuationQueue.add(key);
  };
  migrations.addHandler({
    add: (m) => {
      evacuationOf(m, true);
    },
    update: (_, m) => {
      evacuationOf(m, false);
    },
    delete: (m) => {
      evacuationOf(m, false);
    },
  });

  manager.controller({
    name: "vm",
    primary: vms,
    queue: vmQueue,
    workers,
    reconcile: createVmReconciler({
      client,
      vms,
      vmis,
      claims,
      dataVolumes,
      expectations: vmExpectations,
      recorder,
      log,
      now,
    }),
  });
  observePhaseTransitions(vmis, registry);
  registerClusterMetrics({
    registry,
    vmis,
    migrations,
    evictionStrategy: () => live.get().evictionStrategy,
    leading: config.leading ?? (() => true),
    ready: () => manager.hasSynced(),
  });
  manager.controller({
    name: "vmi",
    primary: vmis,
    queue: vmiQueue,
    workers,
    reconcile: createVmiReconciler({
      client,
      vmis,
      pods,
      claims,
      dataVolumes,
      expectations: vmiExpectations,
      recorder,
      log,
      now,
      pod,
      vmStateStorageClass: () => live.get().vmStateStorageClass,
    }),
  });
  manager.controller({
    name: "migration",
    primary: migrations,
    queue: migrationQueue,
    workers,
    reconcile: createMigrationReconciler({
      client,
      migrations,
      vmis,
      pods,
      claims,
      policies,
      nodeLabels: (name) => nodes.get(name)?.metadata.labels,
      expectations: migrationExpectations,
      recorder,
      log,
      now,
      pod,
      config: { timeouts: config.migrationTimeouts, cluster: () => live.get().migrations },
    }),
  });
  manager.controller({
    name: "evacuation",
    primary: vmis,
    queue: evacuationQueue,
    workers,
    reconcile: createEvacuationReconciler({
      client,
      vmis,
      migrations,
      expectations: evacuationExpectations,
      recorder,
      evictionStrategy: () => live.get().evictionStrategy,
      now,
    }),
  });
  // Nodes: the heartbeat of each one's handler, and its VMIs when it stops (KubeVirt's node controller).
  const nodeQueue = manager.queue("nodes");
  nodes.addHandler(enqueueSelf<Node>(nodeQueue));
  const nodeOfVmi = (vmi: VirtualMachineInstance) => {
    if (vmi.status?.nodeName) nodeQueue.add(vmi.status.nodeName);
  };
  vmis.addHandler({
    add: nodeOfVmi,
    update: (_, vmi) => {
      nodeOfVmi(vmi);
    },
    delete: () => undefined,
  });
  manager.controller({
    name: "node",
    primary: nodes,
    queue: nodeQueue,
    workers,
    reconcile: createNodeReconciler({
      client,
      nodes,
      vmis,
      pods,
      recorder,
      log,
      now,
      timeoutMs: config.nodeHeartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_SECONDS * 1000,
    }),
  });
  // CDIConfig is cluster-wide: kept only by a controller that watches every namespace.
  if (dataVolumes && config.importer && namespace === undefined)
    registerCdiConfig(manager, { client, uploadProxyUrl: config.uploadProxyUrl });
  // Importer pods: the DataVolume controller's, and the snapshot controller's copy pods (importers of a clone).
  const importerPods = manager.informer<Pod>({
    client,
    type: resources.pods,
    namespace,
    resyncMs,
    labelSelector: `${Label.App}=${LabelValue.Importer}`,
    indexers: { [BY_CLAIM]: podsByClaim },
  });
  if (dataVolumes && config.importer) {
    const dataVolumeQueue = manager.queue("datavolumes");
    dataVolumes.addHandler(enqueueSelf<DataVolume>(dataVolumeQueue));
    // A DataVolume's claim has its name: the same key.
    claims.addHandler(enqueueSelf<PersistentVolumeClaim>(dataVolumeQueue));
    importerPods.addHandler(enqueueOwner<Pod>(dataVolumeQueue, "DataVolume"));
    manager.controller({
      name: "datavolume",
      primary: dataVolumes,
      queue: dataVolumeQueue,
      workers,
      reconcile: createDataVolumeReconciler({
        client,
        dataVolumes,
        claims,
        pods: importerPods,
        recorder: createEventRecorder(client, "datavolume-controller", log),
        log,
        now,
        importer: config.importer,
      }),
    });
  }
  // Restores (snapshot.kubevirt.io): each looks again when its target VM or VMI, its snapshot or content, or a
  // DataVolume it made changes.
  const snapshots = manager.informer<VirtualMachineSnapshot>({
    client,
    type: kubevirtResources.virtualMachineSnapshots,
    namespace,
    resyncMs,
    indexers: snapshotIndexers,
  });
  const snapshotContents = manager.informer<VirtualMachineSnapshotContent>({
    client,
    type: kubevirtResources.virtualMachineSnapshotContents,
    namespace,
    resyncMs,
  });
  const restores = manager.informer<VirtualMachineRestore>({
    client,
    type: kubevirtResources.virtualMachineRestores,
    namespace,
    resyncMs,
    indexers: { [RESTORES_BY_TARGET]: restoresByTarget, [RESTORES_BY_SNAPSHOT]: restoresBySnapshot },
  });
  const restoreQueue = manager.queue("virtualmachinerestores");
  restores.addHandler(enqueueSelf<VirtualMachineRestore>(restoreQueue));
  const byTarget = (o: KubeObject) => restoresIn(restores, RESTORES_BY_TARGET, keyOf(o));
  vms.addHandler(enqueueKeys(restoreQueue, byTarget));
  vmis.addHandler(enqueueKeys(restoreQueue, byTarget));
  snapshots.addHandler(enqueueKeys(restoreQueue, (s) => restoresIn(restores, RESTORES_BY_SNAPSHOT, keyOf(s))));
  snapshotContents.addHandler(
    enqueueKeys(restoreQueue, (c) =>
      restoresIn(
        restores,
        RESTORES_BY_SNAPSHOT,
        `${c.metadata.namespace ?? ""}/${c.spec.virtualMachineSnapshotName ?? ""}`,
      ),
    ),
  );
  dataVolumes?.addHandler(enqueueKeys(restoreQueue, restoreOfDataVolume));
  manager.controller({
    name: "restore",
    primary: restores,
    queue: restoreQueue,
    workers,
    reconcile: createRestoreReconciler({
      client,
      restores,
      snapshots,
      contents: snapshotContents,
      vms,
      vmis,
      dataVolumes,
      recorder,
      log,
      now,
    }),
  });
  // Snapshots (docs/adr/0027): each copies its VM's claims with importer pods, where kubevirt-ts has an importer.
  if (config.snapshots !== false)
    registerSnapshotController(manager, {
      client,
      snapshots,
      contents: snapshotContents,
      vms,
      vmis,
      claims,
      pods: importerPods,
      recorder,
      log,
      now,
      importer: config.importer,
      workers,
    });
  // Clones (clone.kubevirt.io): a snapshot of the source and a restore of it to the new VM, both the clone's own. A
  // clone looks again when it, a snapshot or restore it owns, or a VM it names changes.
  const clones = manager.informer<VirtualMachineClone>({
    client,
    type: kubevirtResources.virtualMachineClones,
    namespace,
    resyncMs,
    indexers: { [CLONES_BY_VM]: clonesByVm },
  });
  const cloneQueue = manager.queue("virtualmachineclones");
  clones.addHandler(enqueueSelf<VirtualMachineClone>(cloneQueue));
  snapshots.addHandler(enqueueOwner<VirtualMachineSnapshot>(cloneQueue, CLONE_KIND));
  restores.addHandler(enqueueOwner<VirtualMachineRestore>(cloneQueue, CLONE_KIND));
  vms.addHandler(enqueueKeys(cloneQueue, (vm) => clones.byIndex(CLONES_BY_VM, keyOf(vm)).map((c) => keyOf(c))));
  manager.controller({
    name: "clone",
    primary: clones,
    queue: cloneQueue,
    workers,
    reconcile: createCloneReconciler({
      client,
      clones,
      snapshots,
      contents: snapshotContents,
      restores,
      vms,
      recorder,
      now,
    }),
  });
  // Exports (export.kubevirt.io): an export server pod per export, woken by its export, its pod, and the VM, VMI,
  // snapshot or claim it reads (a source still filling is looked at again every few seconds).
  const exports = manager.informer<VirtualMachineExport>({
    client,
    type: kubevirtResources.virtualMachineExports,
    namespace,
    resyncMs,
    indexers: { [EXPORTS_BY_SOURCE]: exportsBySource, [EXPORTS_BY_SERVICE]: exportsByService },
  });
  const exportPods = manager.informer<Pod>({
    client,
    type: resources.pods,
    namespace,
    resyncMs,
    labelSelector: EXPORT_SERVICE_LABEL,
  });
  // The export Services' EndpointSlices (they carry the Service's labels): an export is Ready once its Service routes.
  const exportSlices = manager.informer<EndpointSlice>({
    client,
    type: resources.endpointSlices,
    namespace,
    resyncMs,
    labelSelector: EXPORT_SERVICE_LABEL,
    indexers: { [SLICES_BY_SERVICE]: slicesByService },
  });
  const exportQueue = manager.queue("virtualmachineexports");
  const exportsOf = (kind: string) => (o: KubeObject) =>
    exports.byIndex(EXPORTS_BY_SOURCE, `${o.metadata.namespace ?? ""}/${kind}/${o.metadata.name ?? ""}`).map(keyOf);
  exports.addHandler(enqueueSelf<VirtualMachineExport>(exportQueue));
  exportPods.addHandler(enqueueOwner<Pod>(exportQueue, EXPORT_KIND));
  exportSlices.addHandler(
    enqueueKeys(exportQueue, (s: EndpointSlice) =>
      slicesByService(s).flatMap((service) => exports.byIndex(EXPORTS_BY_SERVICE, service).map(keyOf)),
    ),
  );
  vms.addHandler(enqueueKeys(exportQueue, exportsOf("VirtualMachine")));
  vmis.addHandler(enqueueKeys(exportQueue, exportsOf("VirtualMachine")));
  snapshots.addHandler(enqueueKeys(exportQueue, exportsOf(SnapshotKind.VirtualMachineSnapshot)));
  claims.addHandler(enqueueKeys(exportQueue, exportsOf("PersistentVolumeClaim")));
  manager.controller({
    name: "export",
    primary: exports,
    queue: exportQueue,
    workers,
    reconcile: createExportReconciler({
      client,
      exports,
      exportPods,
      claimUsers: [pods, importerPods],
      endpointSlices: exportSlices,
      vms,
      vmis,
      claims,
      snapshots,
      contents: snapshotContents,
      dataVolumes,
      recorder,
      now,
      server: config.importer
        ? { image: config.importer.importerImage, imagePullPolicy: config.importer.imagePullPolicy }
        : undefined,
      dashboardUrl: config.uploadProxyUrl,
      externalCert: config.dashboardCert ?? "",
    }),
  });
  // Unowned pods are reported by the leader, beginning with those already cached.
  manager.onSynced(() => {
    unowned.start(pods.list());
  });
  return manager;
}
