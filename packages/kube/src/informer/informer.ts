import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "@kubevirt-ts/runtime";
import { aborted } from "../abort.ts";
import { ApiError, isGone } from "../client/errors.ts";
import type { ResourceType } from "../client/resources.ts";
import type { KubeClient } from "../client/rest.ts";
import { type KubeObject, type WatchEvent, keyOf } from "../client/types.ts";

// A cache of one kind of object kept current by list-then-watch, as
// client-go's reflector and informer. It lists, watches from the list's
// resourceVersion, and lists again when the watch is too old (410 Gone) or
// after the connection fails, telling handlers what changed in between.
// With a resync period it also hands every cached object to the handlers'
// update again (previous and current the same object), as client-go's
// resync does, so that controllers look again at what nothing changed.
// Cached objects are frozen: handlers and controllers must copy before
// changing anything.

export interface EventHandler<T> {
  add?(object: T): void;
  update?(previous: T, current: T): void;
  delete?(object: T): void;
}

export interface InformerOptions<T> {
  client: KubeClient;
  type: ResourceType;
  log: Logger;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Named secondary indexes, e.g. pods by the UID of their owner. */
  indexers?: Record<string, (object: T) => string[]>;
  /** Bounds for the delay before retrying after a failure. */
  backoff?: { initialMs: number; maxMs: number };
  /** How often every cached object is handed to the handlers' update again; never when unset. */
  resyncMs?: number;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * The object as the cache keeps it: without metadata.managedFields, which no controller reads and which is often a
 * third of an object's size (client-go's informers offer the same as TransformStripManagedFields). An update of a
 * cached object then sends none, and the API server keeps the ones it has.
 */
function withoutManagedFields<T extends KubeObject>(object: T): T {
  if (object.metadata.managedFields === undefined) return object;
  const metadata = { ...object.metadata };
  delete metadata.managedFields;
  return { ...object, metadata };
}

export class Informer<T extends KubeObject> {
  private readonly options: InformerOptions<T>;
  private readonly items = new Map<string, T>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: EventHandler<T>[] = [];
  private synced = false;
  private resourceVersion = "";
  private readonly syncWaiters = new Set<() => void>();

  constructor(options: InformerOptions<T>) {
    this.options = options;
    for (const name of Object.keys(options.indexers ?? {})) this.indexes.set(name, new Map());
  }

  addHandler(handler: EventHandler<T>): void {
    this.handlers.push(handler);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves true once the first list has filled the cache, or false if the signal aborts first. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => {
        this.syncWaiters.delete(onSync);
        resolve(false);
      };
      const onSync = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      };
      this.syncWaiters.add(onSync);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  byIndex(index: string, value: string): T[] {
    const keys = this.indexes.get(index)?.get(value) ?? new Set<string>();
    return [...keys].map((k) => this.items.get(k)).filter((o): o is T => o !== undefined);
  }

  private index(key: string, object: T | undefined, previous: T | undefined): void {
    for (const [name, indexer] of Object.entries(this.options.indexers ?? {})) {
      const index = this.indexes.get(name);
      if (!index) continue;
      for (const value of previous ? indexer(previous) : []) index.get(value)?.delete(key);
      for (const value of object ? indexer(object) : []) {
        let keys = index.get(value);
        if (!keys) index.set(value, (keys = new Set()));
        keys.add(key);
      }
    }
  }

  private put(object: T): void {
    const key = keyOf(object);
    const previous = this.items.get(key);
    const frozen = deepFreeze(withoutManagedFields(object));
    this.items.set(key, frozen);
    this.index(key, frozen, previous);
    for (const h of this.handlers) {
      if (previous) h.update?.(previous, frozen);
      else h.add?.(frozen);
    }
  }

  private remove(key: string): void {
    const previous = this.items.get(key);
    if (!previous) return;
    this.items.delete(key);
    this.index(key, undefined, previous);
    for (const h of this.handlers) h.delete?.(previous);
  }

  /** Replaces the cache with a fresh list, telling handlers about every difference. */
  private async relist(): Promise<void> {
    const { client, type, namespace, labelSelector, fieldSelector } = this.options;
    const seen = new Set<string>();
    let continueToken: string | undefined;
    let resourceVersion: string;
    do {
      const page = await client.list<T>(type, namespace, {
        labelSelector,
        fieldSelector,
        limit: 500,
        continue: continueToken,
      });
      for (const item of page.items) {
        const key = keyOf(item);
        seen.add(key);
        if (this.items.get(key)?.metadata.resourceVersion !== item.metadata.resourceVersion) this.put(item);
      }
      // The last page carries an empty continue token, or none.
      continueToken = page.metadata.continue === "" ? undefined : page.metadata.continue;
      resourceVersion = page.metadata.resourceVersion ?? "";
    } while (continueToken);
    for (const key of [...this.items.keys()]) if (!seen.has(key)) this.remove(key);
    this.resourceVersion = resourceVersion;
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters) resolve();
      this.syncWaiters.clear();
    }
  }

  private onEvent(event: WatchEvent<T>): void {
    if (event.type === "ERROR") {
      const status = event.object as unknown as { code?: number; reason?: string; message?: string };
      throw new ApiError(status.code ?? 500, status, `watch ${this.options.type.plural}`);
    }
    const rv = event.object.metadata.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (event.type === "ADDED" || event.type === "MODIFIED") this.put(event.object);
    else if (event.type === "DELETED") this.remove(keyOf(event.object));
  }

  /** Every resyncMs, once synced: each cached object to every handler's update, as it is. */
  private async resync(signal: AbortSignal): Promise<void> {
    const period = this.options.resyncMs;
    if (!period) return;
    while (!signal.aborted) {
      const slept = await sleep(period, undefined, { signal }).then(
        () => true,
        () => false,
      );
      if (!slept || !this.synced) continue;
      for (const object of [...this.items.values()]) for (const h of this.handlers) h.update?.(object, object);
    }
  }

  /** Lists and watches (and resyncs, when asked to) until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.listAndWatch(signal), this.resync(signal)]);
  }

  private async listAndWatch(signal: AbortSignal): Promise<void> {
    const { client, type, namespace, labelSelector, fieldSelector, log } = this.options;
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 500, maxMs: 30_000 };
    let delay = initialMs;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
        }
        // Servers end watches after the timeout; a spread of timeouts keeps informers from reconnecting together.
        const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
        await client.watch<T>(
          type,
          namespace,
          { labelSelector, fieldSelector, resourceVersion: this.resourceVersion, timeoutSeconds },
          (e) => {
            this.onEvent(e);
          },
          signal,
        );
        delay = initialMs;
      } catch (error) {
        if (aborted(signal)) break;
        if (isGone(error)) {
          log.info("watch too old; listing again", { resource: type.plural, resourceVersion: this.resourceVersion });
          needList = true;
          continue;
        }
        // A dropped watch resumes from the last resourceVersion seen; a failed list is retried whole.
        log.warn("list or watch failed; retrying", { resource: type.plural, error, retryInMs: delay });
        await sleep(delay, undefined, { signal }).catch(() => undefined);
        delay = Math.min(delay * 2, maxMs);
      }
    }
  }
}
