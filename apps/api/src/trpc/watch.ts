import { type KubeClient, type KubeObject, type ResourceType, type Status, type WatchEvent, isGone } from "@kubevirt-ts/kube";
import { tracked } from "@trpc/server";

// A collection as a stream, shaped like an informer's: the list first, then
// every change, each tagged with its resourceVersion. A client that lost the
// stream comes back with the last version it saw (SSE's Last-Event-ID) and
// continues from there; when that version is too old for the API server, it
// gets a fresh list instead.

export type WatchMessage<T> = { type: "LIST"; items: T[] } | { type: "ADDED" | "MODIFIED" | "DELETED"; object: T };

const WATCH_TIMEOUT_SECONDS = 240;

export async function* listThenWatch<T extends KubeObject>(client: KubeClient, type: ResourceType, namespace: string | undefined, lastEventId: string | null | undefined, signal: AbortSignal | undefined, options: { fieldSelector?: string } = {}) {
  const list = async () => {
    const result = await client.list<T>(type, namespace, options);
    return { version: result.metadata.resourceVersion ?? "", message: { type: "LIST" as const, items: result.items } };
  };
  let version = lastEventId ?? "";
  if (version === "") {
    const first = await list();
    version = first.version;
    yield tracked(version, first.message as WatchMessage<T>);
  }
  while (!signal?.aborted) {
    const events: WatchEvent<T>[] = [];
    let wake: (() => void) | undefined;
    const state: { ended: boolean; failure?: unknown } = { ended: false };
    const watching = client
      .watch<T>(type, namespace, { ...options, resourceVersion: version, timeoutSeconds: WATCH_TIMEOUT_SECONDS }, (event) => {
        events.push(event);
        wake?.();
      }, signal)
      .catch((error: unknown) => {
        state.failure = error;
      })
      .finally(() => {
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
      if (event.type !== "BOOKMARK") yield tracked<WatchMessage<T>>(version, { type: event.type, object: event.object });
    }
    await watching;
    if (signal?.aborted) return;
    if (expired || isGone(state.failure)) {
      const fresh = await list();
      version = fresh.version;
      yield tracked(version, fresh.message as WatchMessage<T>);
    } else if (state.failure !== undefined) {
      throw state.failure instanceof Error ? state.failure : new Error(JSON.stringify(state.failure));
    }
  }
}
