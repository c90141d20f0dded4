import {
  type KubeClient,
  type KubeObject,
  type ResourceType,
  type Status,
  type WatchEvent,
  isGone,
} from "@kubevirt-ts/kube";
import { tracked } from "@trpc/server";
import { limits } from "../limits.ts";

// A collection as a stream, shaped like an informer's: the list first, then
// every change, each tagged with its resourceVersion. A client that lost the
// stream comes back with the last version it saw (SSE's Last-Event-ID) and
// continues from there; when that version is too old for the API server, it
// gets a fresh list instead.
//
// The events wait in a bounded queue (limits.watchQueue) while the client
// reads slower than the cluster changes (tRPC pulls the next event only as
// the response drains). Past the bound the queue is dropped and the watch
// stopped; once the client reads again it gets a fresh list, as after an
// expired version, and the watch goes on from there: the stream never holds
// more than the bound and the client misses nothing. (Watching again from the
// last event sent could meet the same burst again, and again.)

export type WatchMessage<T> = { type: "LIST"; items: T[] } | { type: "ADDED" | "MODIFIED" | "DELETED"; object: T };

const WATCH_TIMEOUT_SECONDS = 240;

/** Bounds on the events a stream holds unsent: how many, and their JSON's length in all. */
export interface WatchQueueBounds {
  events: number;
  bytes: number;
}

/** The events a watch received and its stream has not sent yet; past a bound it drops them all and takes no more. */
export class WatchQueue<T> {
  private readonly bounds: WatchQueueBounds;
  private readonly size: (event: T) => number;
  private events: { event: T; bytes: number }[] = [];
  private bytes = 0;
  /** Set once an event came past a bound: what was held is dropped, to be read again from the API server. */
  overflowed = false;

  constructor(bounds: WatchQueueBounds, size: (event: T) => number = (event) => JSON.stringify(event).length) {
    this.bounds = bounds;
    this.size = size;
  }

  /** Holds an event; false (and the queue emptied) when it would pass a bound, or did before. */
  push(event: T): boolean {
    if (this.overflowed) return false;
    const bytes = this.size(event);
    if (this.events.length >= this.bounds.events || this.bytes + bytes > this.bounds.bytes) {
      this.overflowed = true;
      this.events = [];
      this.bytes = 0;
      return false;
    }
    this.events.push({ event, bytes });
    this.bytes += bytes;
    return true;
  }

  shift(): T | undefined {
    const first = this.events.shift();
    if (first) this.bytes -= first.bytes;
    return first?.event;
  }

  get length(): number {
    return this.events.length;
  }
}

export interface ListThenWatchOptions {
  fieldSelector?: string;
  /** limits.watchQueue unless a test asks for others. */
  queue?: WatchQueueBounds;
  /** Told each time the client fell behind past the queue's bound (the watch stopped; a fresh list follows). */
  fellBehind?: () => void;
}

export async function* listThenWatch<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  namespace: string | undefined,
  lastEventId: string | null | undefined,
  signal: AbortSignal | undefined,
  options: ListThenWatchOptions = {},
) {
  const { fieldSelector } = options;
  const selection = fieldSelector === undefined ? {} : { fieldSelector };
  const list = async () => {
    const result = await client.list<T>(type, namespace, selection);
    return { version: result.metadata.resourceVersion ?? "", message: { type: "LIST" as const, items: result.items } };
  };
  let version = lastEventId ?? "";
  if (version === "") {
    const first = await list();
    version = first.version;
    yield tracked(version, first.message as WatchMessage<T>);
  }
  while (!signal?.aborted) {
    const events = new WatchQueue<WatchEvent<T>>(options.queue ?? limits.watchQueue);
    let wake: (() => void) | undefined;
    const state: { ended: boolean; failure?: unknown } = { ended: false };
    // This watch stops when the stream does, or when its client fell behind.
    const stop = new AbortController();
    const stopWatching = () => {
      stop.abort();
    };
    signal?.addEventListener("abort", stopWatching, { once: true });
    const watching = client
      .watch<T>(
        type,
        namespace,
        { ...selection, resourceVersion: version, timeoutSeconds: WATCH_TIMEOUT_SECONDS },
        (event) => {
          if (!events.push(event) && !stop.signal.aborted) {
            options.fellBehind?.();
            stop.abort();
          }
          wake?.();
        },
        stop.signal,
      )
      .catch((error: unknown) => {
        state.failure = error;
      })
      .finally(() => {
        signal?.removeEventListener("abort", stopWatching);
        state.ended = true;
        wake?.();
      });
    let expired = false;
    for (;;) {
      const event = events.shift();
      if (!event) {
        if (state.ended) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      if (event.type === "ERROR") {
        const status = event.object as unknown as Status;
        if (status.code === 410) {
          expired = true;
          break;
        }
        throw new Error(`the watch failed: ${status.message ?? "no message"}`);
      }
      version = event.object.metadata.resourceVersion ?? version;
      if (event.type !== "BOOKMARK")
        yield tracked<WatchMessage<T>>(version, { type: event.type, object: event.object });
    }
    await watching;
    if (signal?.aborted) return;
    if (expired || events.overflowed || isGone(state.failure)) {
      const fresh = await list();
      version = fresh.version;
      yield tracked(version, fresh.message as WatchMessage<T>);
    } else if (state.failure !== undefined) {
      throw state.failure instanceof Error ? state.failure : new Error(JSON.stringify(state.failure));
    }
  }
}
