import { setTimeout as sleep } from "node:timers/promises";
import { LauncherCallError, type LauncherClient, MAX_WATCH_SECONDS } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";

// The handler learns of a domain's change from its launcher, pushed, as
// KubeVirt's handler does from its launchers' notify socket: one `watch`
// outstanding per launcher it drives, answered by the launcher the moment
// libvirt says the domain changed; each answer with a new revision puts the
// VMI in the queue. A launcher from before `watch` answers it with an error
// (an unknown method is a BadRequest), and is asked for its state at an
// interval instead. A watch lost with its connection is started again by
// the VMI's next look.

/** How long each watch waits at the launcher before it is answered unchanged and asked again. */
export const WATCH_SECONDS = MAX_WATCH_SECONDS;
/**
 * How long after an answer the next watch is sent: changes within it come in one answer. A launcher that answers
 * every watch at once, changed or not, gets at most one call in that time, and its VMI at most one look from its
 * pushes: not a loop as fast as it can answer, nor a guest that reboots in a loop driving the handler's writes.
 */
export const WATCH_GAP_MS = 500;
/** How long after a launcher refused a watch for a reason other than not knowing it the watch is asked again. */
export const WATCH_RETRY_MS = 2_000;

interface Watch {
  client: LauncherClient;
  /** Whether the launcher has answered this watch: its changes come pushed. */
  pushing: boolean;
}

export interface DomainWatchesOptions {
  /** The domain of the VMI with this key changed. */
  changed: (key: string) => void;
  /** The watch ended with its connection (or the launcher cannot watch): the VMI should be looked at again. */
  lost: (key: string) => void;
  log: Logger;
}

export class DomainWatches {
  private readonly o: DomainWatchesOptions;
  /** By launcher pod uid. */
  private readonly watches = new Map<string, Watch>();
  /** The launcher pods whose launcher has no watch: they are polled. */
  private readonly polled = new Set<string>();

  constructor(options: DomainWatchesOptions) {
    this.o = options;
  }

  /**
   * Keeps one watch outstanding on the launcher of this pod, for the VMI with that key; true once the launcher
   * pushes its changes, false while it is not known to (or known not to): then the caller polls it.
   */
  ensure(podUid: string, key: string, client: LauncherClient): boolean {
    if (this.polled.has(podUid)) return false;
    const current = this.watches.get(podUid);
    if (current?.client === client) return current.pushing;
    const watch: Watch = { client, pushing: false };
    this.watches.set(podUid, watch);
    void this.run(podUid, key, watch);
    return false;
  }

  /** How many launchers are watched now. */
  get size(): number {
    return this.watches.size;
  }

  forget(podUid: string): void {
    this.watches.delete(podUid);
    this.polled.delete(podUid);
  }

  private async run(podUid: string, key: string, watch: Watch): Promise<void> {
    const current = () => this.watches.get(podUid) === watch;
    // 0: the launcher's first answer comes at once, whatever changed between the VMI's last look and this watch.
    let since = 0;
    try {
      while (current()) {
        // Its own timeout: the launcher answers by WATCH_SECONDS, the method's default allows for a slow answer.
        const change = await watch.client.call("watch", { since, timeoutSeconds: WATCH_SECONDS });
        if (!current()) return;
        watch.pushing = true;
        if (change.revision !== since) {
          since = change.revision;
          this.o.changed(key);
        }
        await sleep(WATCH_GAP_MS);
      }
    } catch (error) {
      if (!current()) return;
      if (error instanceof LauncherCallError && error.code !== "BadRequest") {
        // A launcher that knows `watch` but failed this one (it could not read its domain): polled meanwhile, its
        // watch asked again after a while. Only an unknown method means a launcher from before `watch`.
        watch.pushing = false;
        this.o.lost(key);
        await sleep(WATCH_RETRY_MS);
        if (current()) void this.run(podUid, key, watch);
        return;
      }
      this.watches.delete(podUid);
      if (error instanceof LauncherCallError) {
        this.polled.add(podUid);
        this.o.log.info("the launcher cannot push its domain's changes; asking it at an interval", {
          pod: podUid,
          error: error.message,
        });
      }
      this.o.lost(key);
    }
  }
}
