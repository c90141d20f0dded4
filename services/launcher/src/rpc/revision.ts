// The launcher's count of its domain's changes, and the `watch` calls that
// wait for the next one (the protocol's long poll, which stands in for
// KubeVirt's notify socket: the handler keeps one watch outstanding and is
// answered the moment the domain changes, instead of asking every few
// seconds).

/** How many watches may wait at once (a handler keeps one); past that, the oldest is answered at once. */
export const MAX_WATCHERS = 8;

interface Watcher {
  resolve: (revision: number) => void;
  timer: NodeJS.Timeout;
}

export class Revision {
  private value = 1;
  private readonly watchers = new Set<Watcher>();

  get current(): number {
    return this.value;
  }

  /** How many watches wait now. */
  get waiting(): number {
    return this.watchers.size;
  }

  /** Counts a change, and answers every watch waiting for one. */
  bump(): void {
    this.value++;
    for (const watcher of [...this.watchers]) this.release(watcher);
  }

  /**
   * The revision once it differs from `since` (a caller's `since` from another launcher process, larger than this
   * one's, differs too): at once when it already does, else at the next change, or after timeoutMs unchanged.
   */
  next(since: number, timeoutMs: number): Promise<number> {
    if (this.value !== since) return Promise.resolve(this.value);
    if (this.watchers.size >= MAX_WATCHERS) {
      const [oldest] = this.watchers;
      if (oldest) this.release(oldest);
    }
    return new Promise((resolve) => {
      const watcher: Watcher = {
        resolve,
        timer: setTimeout(() => {
          this.release(watcher);
        }, timeoutMs),
      };
      this.watchers.add(watcher);
    });
  }

  /** Answers every waiting watch with the revision as it is (the launcher is stopping). */
  close(): void {
    for (const watcher of [...this.watchers]) this.release(watcher);
  }

  private release(watcher: Watcher): void {
    clearTimeout(watcher.timer);
    this.watchers.delete(watcher);
    watcher.resolve(this.value);
  }
}
