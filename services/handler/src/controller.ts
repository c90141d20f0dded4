import {
  ControllerManager,
  type EventRecorder,
  type KubeClient,
  type Pod,
  type Reconcile,
  createEventRecorder,
  keyOf,
  resources,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  type GuestOsInfo,
  type VmiDomainAction,
  VmiPhase,
  Label,
  LabelValue,
  type VirtualMachineInstance,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import {
  LAUNCHER_CONTAINER,
  LAUNCHER_PODS_BY_VMI,
  LAUNCHER_SOCKET_WAIT_SECONDS,
  UNOWNED_LAUNCHER_PODS_METRIC,
  launcherPodIndex,
  launcherPodOwnerKey,
  launcherPodsKeyOf,
  unownedLauncherPodReason,
} from "@kubevirt-ts/node-contract";
import { isHandedOver } from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";
import { Gauge, type Registry } from "prom-client";
import { ConsoleRefusal, type ConsoleTarget } from "./console-server.ts";
import { launcherPodFor } from "./launcher-pod.ts";
import { LauncherNotListeningError, type Launchers } from "./launchers.ts";
import { DomainWatches } from "./domain-watch.ts";
import { LauncherCallError, LauncherError } from "@kubevirt-ts/launcher-protocol";
import { type ObservedDomain, handlerStatus, launcherFailedStatus, stopOverdue } from "./status.ts";
import { type MigrationState, migratedAway, migrationStateOf, withMigrationState } from "./migration/decide.ts";
import type { MigrationDriver } from "./migration/wiring.ts";
import {
  type SyncEvent,
  domainActionEvent,
  domainDefined,
  domainKilled,
  launcherEndEvents,
  migrationTargetEvents,
  nodeVmiEvents,
} from "./sync-events.ts";

// The handler's loop over the VMIs of its node: for each VMI the controller
// has handed over, it makes sure the launcher runs the domain, and reports
// the domain's state in the VMI's status. The domain's state is one more
// input: its launcher pushes each change (domain-watch.ts), which puts the
// VMI in the queue; a VMI is looked at again at DOMAIN_RESYNC_MS all the
// same, and every cached VMI at each informer resync, whatever its state.

/** How often a VMI is looked at whose launcher pushes its domain's changes: a safety net, not the way news comes. */
const DOMAIN_RESYNC_MS = 60_000;
/** How often a VMI is looked at whose launcher cannot push (one from before `watch`), or whose watch is not up yet. */
const DOMAIN_POLL_MS = 2_000;
/** How soon a VMI whose launcher has not opened its socket is looked at again when its socket cannot be watched. */
const SOCKET_RECHECK_MS = 1_000;
/** How long to wait before asking a guest's agent again after it did not answer. */
const AGENT_RETRY_MS = 20_000;
const RESYNC_MS = 5 * 60_000;
/** The VMI informer's index by node-contract's launcherPodsKeyOf, the key launcher pods are indexed by too. */
const VMIS_BY_KEY = "launcherPodsKey";

export interface HandlerConfig {
  client: KubeClient;
  log: Logger;
  registry: Registry;
  nodeName: string;
  launchers: Launchers;
  workers: number;
  /** The handler's part in live migrations; none: this handler takes part in none. */
  migrations?: MigrationDriver;
  /** Where KubeVirt's SyncEvents go (sync-events.ts); by default, Events written with the handler's client. */
  recorder?: EventRecorder;
  now?: () => Date;
}

/** How often a migration under way is looked at. */
const MIGRATION_POLL_MS = 1_000;

export function createHandler(config: HandlerConfig) {
  const { client, log, registry, nodeName, launchers } = config;
  const now = config.now ?? (() => new Date());
  const recorder = config.recorder ?? createEventRecorder(client, { component: "virt-handler", host: nodeName }, log);
  const record = (vmi: VirtualMachineInstance, events: SyncEvent[]) => {
    for (const e of events) recorder.record(vmi, e.type, e.reason, e.message);
  };
  // The VMIs whose guest this handler turned off, by uid: that event once.
  const killed = new Set<string>();
  const manager = new ControllerManager({ log, registry });
  const queue = manager.queue("handler-vmis");
  const vmis = manager.informer<VirtualMachineInstance>({
    client,
    type: kubevirtResources.virtualMachineInstances,
    labelSelector: `${Label.NodeName}=${nodeName}`,
    resyncMs: RESYNC_MS,
    indexers: { [VMIS_BY_KEY]: (vmi) => [launcherPodsKeyOf(vmi)] },
  });
  const pods = manager.informer<Pod>({
    client,
    type: resources.pods,
    labelSelector: `${Label.App}=${LabelValue.Launcher}`,
    fieldSelector: `spec.nodeName=${nodeName}`,
    indexers: { [LAUNCHER_PODS_BY_VMI]: launcherPodIndex },
  });
  new Gauge({
    ...UNOWNED_LAUNCHER_PODS_METRIC,
    registers: [registry],
    collect() {
      this.set(pods.list().filter((p) => unownedLauncherPodReason(p) !== undefined).length);
    },
  });
  // When each VMI's guest agent was last asked in vain, by VMI uid.
  const agentSilentSince = new Map<string, number>();
  const watches = new DomainWatches({
    changed: (key) => {
      // A change may be the guest's agent connecting: it is asked again at once.
      agentSilentSince.delete(vmis.get(key)?.metadata.uid ?? "");
      queue.add(key);
    },
    lost: (key) => {
      queue.addAfter(key, DOMAIN_POLL_MS);
    },
    log,
  });
  const guestOs = async (
    vmi: VirtualMachineInstance,
    launcher: Awaited<ReturnType<Launchers["get"]>>,
  ): Promise<GuestOsInfo | undefined> => {
    // {} until an agent answers: KubeVirt always writes the field (withPhase).
    const known = vmi.status?.guestOSInfo;
    if (known && Object.keys(known).length > 0) return known;
    const uid = vmi.metadata.uid ?? "";
    if (Date.now() - (agentSilentSince.get(uid) ?? 0) < AGENT_RETRY_MS) return undefined;
    try {
      const info = await launcher.call("guestOsInfo");
      agentSilentSince.delete(uid);
      return info;
    } catch (error) {
      // A launcher that does not answer, or breaks the protocol, fails the reconcile; only its answer "no agent" is
      // expected.
      if (!(error instanceof LauncherCallError && error.code === "Failed")) throw error;
      // Most guests have no agent, and a booting one has not started it yet.
      agentSilentSince.set(uid, Date.now());
      return undefined;
    }
  };
  /**
   * How much longer the pod's launcher may take to open its socket (LAUNCHER_SOCKET_WAIT_SECONDS from its container's
   * start); 0 once it may not.
   */
  const socketWaitLeftMs = (pod: Pod) => {
    const started = pod.status?.containerStatuses?.find((c) => c.name === LAUNCHER_CONTAINER)?.state?.running
      ?.startedAt;
    return started === undefined
      ? 0
      : Math.max(0, new Date(started).getTime() + LAUNCHER_SOCKET_WAIT_SECONDS * 1000 - now().getTime());
  };
  /** The launcher pod running the VMI's domain on this node: owned by the VMI and named in its activePods. */
  const runningLauncherPod = (vmi: VirtualMachineInstance, evenTerminating = false) =>
    launcherPodFor(vmi, pods.byIndex(LAUNCHER_PODS_BY_VMI, launcherPodsKeyOf(vmi)), nodeName, evenTerminating);
  const enqueue = (vmi: VirtualMachineInstance) => {
    queue.add(keyOf(vmi));
  };
  /** The VMI that owns a pod, if this node has it: a pod's change is news to that VMI and no other. */
  const ownerOf = (pod: Pod) => {
    const key = launcherPodOwnerKey(pod);
    return key === undefined ? [] : vmis.byIndex(VMIS_BY_KEY, key);
  };
  vmis.addHandler({
    add: enqueue,
    update: (old, v) => {
      record(v, nodeVmiEvents(old, v, nodeName));
      enqueue(v);
    },
    delete: (vmi) => {
      killed.delete(vmi.metadata.uid ?? "");
      enqueue(vmi);
    },
  });
  pods.addHandler({
    add: (pod) => {
      ownerOf(pod).forEach(enqueue);
    },
    update: (old, pod) => {
      for (const vmi of ownerOf(pod)) {
        record(vmi, launcherEndEvents(vmi, old, pod, nodeName));
        enqueue(vmi);
      }
    },
    delete: (pod) => {
      launchers.forget(pod.metadata.uid ?? "");
      watches.forget(pod.metadata.uid ?? "");
      for (const vmi of ownerOf(pod)) {
        record(vmi, launcherEndEvents(vmi, pod, "deleted", nodeName));
        agentSilentSince.delete(vmi.metadata.uid ?? "");
        enqueue(vmi);
      }
    },
  });

  const reconcile: Reconcile = async (key) => {
    const vmi = vmis.get(key);
    if (!vmi) return undefined;
    const phase = vmi.status?.phase;
    // Only VMIs handed to this node and not finished.
    if (!isHandedOver(phase) || vmi.status?.nodeName !== nodeName) return undefined;
    // Deletion stops the launcher through its pod, which shuts the guest down within its grace period; once that is
    // over (or cut to 0 by a forced stop meanwhile), the guest is turned off at once, as KubeVirt's handler kills it.
    if (vmi.metadata.deletionTimestamp) {
      const going = runningLauncherPod(vmi, true);
      if (!going || !stopOverdue(vmi, now())) return undefined;
      const turnedOff = await (await launchers.get(going.metadata.uid ?? "")).call("kill").then(
        () => true,
        (error: unknown) => {
          log.warn("could not turn off a guest whose stop is overdue", { vmi: key, error });
          return false;
        },
      );
      const uid = vmi.metadata.uid ?? "";
      if (turnedOff && !killed.has(uid)) {
        killed.add(uid);
        record(vmi, [domainKilled()]);
      }
      return undefined;
    }
    const pod = runningLauncherPod(vmi);
    if (!pod) return { requeueAfterMs: DOMAIN_POLL_MS };
    let domain: ObservedDomain;
    let os: GuestOsInfo | undefined;
    const migration = migrationStateOf(vmi);
    let migrationPatch: Partial<MigrationState> | undefined;
    let pushed: boolean;
    try {
      const launcher = await launchers.get(pod.metadata.uid ?? "");
      domain = await launcher.call("state");
      if (domain.state === "NoDomain") {
        domain = await launcher.call("sync", vmi);
        if (domain.state !== "NoDomain") record(vmi, [domainDefined()]);
      }
      pushed = watches.ensure(pod.metadata.uid ?? "", key, launcher);
      // A migration from this node: the source's half, its state written with the rest of the status.
      if (config.migrations && migration?.migrationUid && migration.sourceNode === nodeName)
        migrationPatch = await config.migrations.sourceSide(vmi, migration, pod.metadata.uid ?? "");
      // The guest's agent is asked once the VMI says Running: that write is not held back by the question.
      os =
        domain.state === "Running" && vmi.status.phase === VmiPhase.Running ? await guestOs(vmi, launcher) : undefined;
    } catch (error) {
      if (!(error instanceof LauncherError)) throw error;
      // A launcher still starting libvirt: the VMI comes back here the moment its socket appears, and once more when
      // the wait is over, when a launcher that never opened it is reported. Without a watch, it is looked at every
      // second.
      const waitLeftMs = error instanceof LauncherNotListeningError ? socketWaitLeftMs(pod) : 0;
      if (waitLeftMs > 0) {
        const uid = pod.metadata.uid ?? "";
        return launchers
          .whenSocketAppears(uid, () => {
            enqueue(vmi);
          })
          .then(
            () => ({ requeueAfterMs: waitLeftMs }),
            (watchError: unknown) => {
              log.warn("could not watch for a launcher's socket; looking again in a second", {
                pod: uid,
                error: watchError,
              });
              return { requeueAfterMs: SOCKET_RECHECK_MS };
            },
          );
      }
      // A launcher that fails, breaks the protocol or does not answer is this VMI's failure alone:
      // said on the VMI, and the VMI tried again with the queue's back-off while the others go on.
      await writeStatusIfChanged(
        client,
        kubevirtResources.virtualMachineInstances,
        vmi,
        launcherFailedStatus(vmi, error, now()),
      );
      throw error;
    }
    // A domain that left for its migration's target is no guest that stopped: the controller moves the VMI over.
    const status = migratedAway(domain) ? vmi.status : handlerStatus(vmi, domain, pod.status ?? {}, now(), os);
    await writeStatusIfChanged(
      client,
      kubevirtResources.virtualMachineInstances,
      vmi,
      withMigrationState(status, migration, migrationPatch),
    );
    const moving = migration?.migrationUid !== undefined && migration.completed !== true && migration.failed !== true;
    return { requeueAfterMs: moving ? MIGRATION_POLL_MS : pushed ? DOMAIN_RESYNC_MS : DOMAIN_POLL_MS };
  };

  // The target's half of the migrations coming to this node: VMIs the controller labelled with this node as their
  // target.
  const migrating = config.migrations;
  if (migrating) {
    const targetQueue = manager.queue("handler-migration-targets");
    const targets = manager.informer<VirtualMachineInstance>({
      client,
      type: kubevirtResources.virtualMachineInstances,
      labelSelector: `${Label.MigrationTargetNodeName}=${nodeName}`,
      resyncMs: RESYNC_MS,
    });
    const enqueueTarget = (vmi: VirtualMachineInstance) => {
      targetQueue.add(keyOf(vmi));
    };
    targets.addHandler({
      add: enqueueTarget,
      update: (old, v) => {
        record(v, migrationTargetEvents(old, v, nodeName));
        enqueueTarget(v);
      },
      delete: (vmi) => {
        const uid = migrationStateOf(vmi)?.migrationUid;
        if (uid !== undefined) migrating.forgetTarget(uid);
      },
    });
    const targetReconcile: Reconcile = async (key) => {
      const vmi = targets.get(key);
      const state = vmi ? migrationStateOf(vmi) : undefined;
      if (!vmi || !state?.migrationUid || state.targetNode !== nodeName) return undefined;
      // The migration's target pod: the VMI's launcher pod on this node, labelled with the migration, its launcher
      // started.
      const pod = pods
        .byIndex(LAUNCHER_PODS_BY_VMI, launcherPodsKeyOf(vmi))
        .find(
          (p) =>
            p.metadata.name === state.targetPod &&
            p.metadata.labels?.[Label.MigrationJobUid] === state.migrationUid &&
            p.spec?.nodeName === nodeName,
        );
      const started =
        pod?.status?.containerStatuses?.find((c) => c.name === LAUNCHER_CONTAINER)?.state?.running !== undefined
          ? pod
          : undefined;
      const patch = await migrating.targetSide(vmi, state, started?.metadata.uid);
      if (patch)
        await writeStatusIfChanged(
          client,
          kubevirtResources.virtualMachineInstances,
          vmi,
          withMigrationState(vmi.status, state, patch),
        );
      return state.completed === true || state.failed === true ? undefined : { requeueAfterMs: MIGRATION_POLL_MS };
    };
    manager.controller({
      name: "handler-migration-targets",
      primary: targets,
      queue: targetQueue,
      reconcile: targetReconcile,
      workers: 2,
    });
  }

  // After a restart, every running guest is looked at again: nothing is restarted, only reported.
  manager.controller({ name: "handler", primary: vmis, queue, reconcile, workers: config.workers });
  return {
    /** Runs the informers and the handler's workers (hasSynced, run). */
    manager,
    /** The VMI of this node with that name, and the launcher pod running it. */
    consoleTarget: (namespace: string, name: string): ConsoleTarget => {
      const vmi = vmis.get(`${namespace}/${name}`);
      if (!vmi || vmi.status?.nodeName !== nodeName)
        throw new ConsoleRefusal(404, `no VMI ${namespace}/${name} runs on node ${nodeName}`);
      const pod = runningLauncherPod(vmi);
      if (!pod?.metadata.uid)
        throw new ConsoleRefusal(
          409,
          `the VMI ${namespace}/${name} has no running launcher pod; wait until it is Running`,
        );
      return { vmi, podUid: pod.metadata.uid };
    },
    /**
     * Carries out a domain action through the target's launcher, and records it on the VMI as KubeVirt's handler does.
     */
    act: async (target: ConsoleTarget, action: VmiDomainAction): Promise<unknown> => {
      // The launcher's methods carry the domain actions' names.
      const answer = await (await launchers.get(target.podUid)).call(action);
      record(target.vmi, [domainActionEvent(action)]);
      return answer;
    },
    /** The VMIs running on this node, each with its running launcher pod (the VM metrics' sources). */
    running: (): ConsoleTarget[] =>
      vmis.list().flatMap((vmi) => {
        if (vmi.status?.nodeName !== nodeName || vmi.status.phase !== VmiPhase.Running) return [];
        const uid = runningLauncherPod(vmi)?.metadata.uid;
        return uid ? [{ vmi, podUid: uid }] : [];
      }),
  };
}
