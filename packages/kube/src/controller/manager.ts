import type { Logger } from "@kubevirt-ts/runtime";
import type { Registry } from "prom-client";
import { type KubeObject, keyOf } from "../client/types.ts";
import { Informer, type InformerOptions } from "../informer/informer.ts";
import { WorkQueue, type WorkQueueMetrics, createWorkQueueMetrics } from "../workqueue/index.ts";
import { type ControllerMetrics, type Reconcile, createControllerMetrics, runController } from "./runner.ts";

// A process's informers and controllers, run in client-go's order: the
// informers list and watch; once every cache has synced, each controller's
// queue gets the key of every object its primary informer holds (so that
// whatever state the cluster is in, the controllers converge from it) and
// the workers start; when the signal aborts, the queues take no more keys and
// the workers finish the keys they hold. The informers may run without the
// controllers: a replica that is not the leader keeps its caches warm.

/** What the manager needs of an informer, whatever kind of object it caches. */
interface Cache {
  run(signal: AbortSignal): Promise<void>;
  waitForSync(signal: AbortSignal): Promise<boolean>;
  hasSynced(): boolean;
}

export interface ManagedController<T extends KubeObject> {
  /** Names the controller in logs and metrics. */
  name: string;
  /** The informer of the objects the controller reconciles: each one's key is queued once the caches have synced. */
  primary: Informer<T>;
  /** The controller's queue, from queue(); its informers' handlers add keys to it. */
  queue: WorkQueue;
  reconcile: Reconcile;
  workers: number;
}

interface Registered {
  name: string;
  queue: WorkQueue;
  reconcile: Reconcile;
  workers: number;
  keys(): string[];
}

export interface ControllerManagerOptions {
  log: Logger;
  /** Where the work queues' and reconciles' metrics go. */
  registry: Registry;
}

export class ControllerManager {
  readonly #log: Logger;
  readonly #queueMetrics: WorkQueueMetrics;
  readonly #controllerMetrics: ControllerMetrics;
  readonly #caches: Cache[] = [];
  readonly #controllers: Registered[] = [];
  readonly #onSynced: (() => void)[] = [];
  #controllersStarted = false;

  constructor(options: ControllerManagerOptions) {
    this.#log = options.log;
    this.#queueMetrics = createWorkQueueMetrics(options.registry);
    this.#controllerMetrics = createControllerMetrics(options.registry);
  }

  /** A new informer the manager runs and waits for; the manager's logger unless one is given. */
  informer<T extends KubeObject>(options: Omit<InformerOptions<T>, "log"> & { log?: Logger }): Informer<T> {
    const informer = new Informer<T>({ ...options, log: options.log ?? this.#log });
    this.#caches.push(informer);
    return informer;
  }

  /** A new work queue, named in the metrics. */
  queue(name: string): WorkQueue {
    return new WorkQueue({ name, metrics: this.#queueMetrics });
  }

  /** Registers a controller, run by runControllers. */
  controller<T extends KubeObject>(controller: ManagedController<T>): void {
    const { name, primary, queue, reconcile, workers } = controller;
    this.#controllers.push({ name, queue, reconcile, workers, keys: () => primary.list().map(keyOf) });
  }

  /**
   * Runs once the caches have synced and every key is queued, before the workers start (e.g. to report what the caches
   * hold).
   */
  onSynced(hook: () => void): void {
    this.#onSynced.push(hook);
  }

  hasSynced(): boolean {
    return this.#caches.every((c) => c.hasSynced());
  }

  /** Runs the informers until the signal aborts. */
  async runInformers(signal: AbortSignal): Promise<void> {
    await Promise.all(this.#caches.map((c) => c.run(signal)));
  }

  /**
   * Waits for every cache (or the signal), queues every primary object's key,
   * then runs the workers until the signal aborts and they have finished the
   * keys they hold. Once per manager: its queues do not start again.
   */
  async runControllers(signal: AbortSignal): Promise<void> {
    if (this.#controllersStarted)
      throw new Error("runControllers was called twice; a ControllerManager's queues run once");
    this.#controllersStarted = true;
    const drain = () => Promise.all(this.#controllers.map((c) => c.queue.shutDownWithDrain()));
    signal.addEventListener("abort", () => void drain(), { once: true });
    const synced = await Promise.all(this.#caches.map((c) => c.waitForSync(signal)));
    if (!synced.every(Boolean)) {
      await drain();
      return;
    }
    for (const c of this.#controllers) for (const key of c.keys()) c.queue.add(key);
    for (const hook of this.#onSynced) hook();
    await Promise.all(
      this.#controllers.map(({ name, queue, reconcile, workers }) =>
        runController({
          name,
          queue,
          reconcile,
          workers,
          log: this.#log.child({ controller: name }),
          metrics: this.#controllerMetrics,
        }),
      ),
    );
  }

  /** Runs the informers and the controllers until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.runInformers(signal), this.runControllers(signal)]);
  }
}
