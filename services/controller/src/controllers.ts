import {
  type EventHandler, Expectations, Informer, type KubeClient, type KubeObject, WorkQueue, createControllerMetrics, createEventRecorder,
  createWorkQueueMetrics, keyOf, resources, runController,
} from "@kubevirt-ts/kube";
import { Kind, Label, LabelValue, type VirtualMachine, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import type { Registry } from "prom-client";
import { controllerOf } from "./common/owner.ts";
import { createVmReconciler } from "./vm/controller.ts";
import { PODS_BY_VMI_UID, createVmiReconciler, podsByVmiUid } from "./vmi/controller.ts";
import type { LauncherPodConfig, Pod } from "./vmi/pod.ts";

// The controller process: informers for VMs, VMIs and launcher pods that
// only enqueue keys, and the VM and VMI controllers working off two queues.

export interface ControllersConfig {
  client: KubeClient;
  log: Logger;
  registry: Registry;
  workers: number;
  pod: LauncherPodConfig;
  /** Watch one namespace only (tests); all namespaces when unset. */
  namespace?: string;
  now?: () => Date;
}

export interface Controllers {
  informers: Informer<KubeObject>[];
  /** Runs the informers until the signal aborts. */
  runInformers(signal: AbortSignal): Promise<void>;
  /** Runs the controllers until the signal aborts, then drains their queues. */
  runControllers(signal: AbortSignal): Promise<void>;
  hasSynced(): boolean;
}

/** Enqueues the key of the object, or of its controlling owner of the given kind. */
function enqueueOwner<T extends KubeObject>(queue: WorkQueue, kind: string, onEvent?: (ownerKey: string, type: "add" | "delete") => void): EventHandler<T> {
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

export function createControllers(config: ControllersConfig): Controllers {
  const { client, log, registry } = config;
  const now = config.now ?? (() => new Date());
  const queueMetrics = createWorkQueueMetrics(registry);
  const controllerMetrics = createControllerMetrics(registry);
  const vmQueue = new WorkQueue({ name: "virtualmachines", metrics: queueMetrics });
  const vmiQueue = new WorkQueue({ name: "virtualmachineinstances", metrics: queueMetrics });
  const vmExpectations = new Expectations();
  const vmiExpectations = new Expectations();
  const recorder = createEventRecorder(client, "virt-controller", log);

  const { namespace } = config;
  const vms = new Informer<VirtualMachine>({ client, type: resources.virtualMachines, log, namespace });
  const vmis = new Informer<VirtualMachineInstance>({ client, type: resources.virtualMachineInstances, log, namespace });
  const pods = new Informer<Pod>({
    client,
    type: resources.pods,
    log,
    namespace,
    labelSelector: `${Label.App}=${LabelValue.Launcher}`,
    indexers: { [PODS_BY_VMI_UID]: podsByVmiUid },
  });

  vms.addHandler(enqueueSelf<VirtualMachine>(vmQueue));
  vmis.addHandler(enqueueSelf<VirtualMachineInstance>(vmiQueue));
  vmis.addHandler(
    enqueueOwner<VirtualMachineInstance>(vmQueue, Kind.VirtualMachine, (key, type) => {
      if (type === "add") vmExpectations.creationObserved(key);
      else vmExpectations.deletionObserved(key);
    }),
  );
  pods.addHandler(
    enqueueOwner<Pod>(vmiQueue, Kind.VirtualMachineInstance, (key, type) => {
      if (type === "add") vmiExpectations.creationObserved(key);
      else vmiExpectations.deletionObserved(key);
    }),
  );

  const informers = [vms, vmis, pods] as unknown as Informer<KubeObject>[];
  return {
    informers,
    hasSynced: () => informers.every((i) => i.hasSynced()),
    runInformers: async (signal) => {
      await Promise.all(informers.map((i) => i.run(signal)));
    },
    runControllers: async (signal) => {
      const abortedEarly = new Promise<void>((resolve) => {
        signal.addEventListener("abort", () => {
          resolve();
        }, { once: true });
      });
      await Promise.race([Promise.all(informers.map((i) => i.waitForSync())), abortedEarly]);
      if (signal.aborted) return;
      // Everything in the caches is looked at once when leadership starts.
      for (const vm of vms.list()) vmQueue.add(keyOf(vm));
      for (const vmi of vmis.list()) vmiQueue.add(keyOf(vmi));
      const stop = () => {
        void vmQueue.shutDownWithDrain();
        void vmiQueue.shutDownWithDrain();
      };
      signal.addEventListener("abort", stop, { once: true });
      await Promise.all([
        runController({ name: "vm", queue: vmQueue, workers: config.workers, log: log.child({ controller: "vm" }), metrics: controllerMetrics, reconcile: createVmReconciler({ client, vms, vmis, expectations: vmExpectations, recorder, log, now }) }),
        runController({ name: "vmi", queue: vmiQueue, workers: config.workers, log: log.child({ controller: "vmi" }), metrics: controllerMetrics, reconcile: createVmiReconciler({ client, vmis, pods, expectations: vmiExpectations, recorder, log, now, pod: config.pod }) }),
      ]);
    },
  };
}
