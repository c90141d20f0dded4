// Keys waiting for a time to be queued. A key waits at most once, for the
// earliest time it was asked for.

interface Entry {
  key: string;
  readyAt: number;
}

export class WaitingSet {
  readonly #readyAt = new Map<string, number>();
  // A min-heap on readyAt. Moving a key earlier pushes a new entry instead of
  // searching the heap; entries whose time no longer matches #readyAt are stale
  // and skipped when they surface.
  #heap: Entry[] = [];

  get size(): number {
    return this.#readyAt.size;
  }

  /** Makes the key wait until readyAt, unless it already waits for an earlier time. */
  add(key: string, readyAt: number): void {
    const current = this.#readyAt.get(key);
    if (current !== undefined && current <= readyAt) return;
    this.#readyAt.set(key, readyAt);
    this.#push({ key, readyAt });
  }

  /** The earliest time a key is waiting for, if any. */
  nextReadyAt(): number | undefined {
    this.#dropStale();
    return this.#heap[0]?.readyAt;
  }

  /** Removes and returns the keys whose time has come, earliest first. */
  takeReady(now: number): string[] {
    const ready: string[] = [];
    for (let next = this.nextReadyAt(); next !== undefined && next <= now; next = this.nextReadyAt()) {
      const entry = this.#pop();
      if (entry === undefined) break;
      this.#readyAt.delete(entry.key);
      ready.push(entry.key);
    }
    return ready;
  }

  clear(): void {
    this.#readyAt.clear();
    this.#heap = [];
  }

  #dropStale(): void {
    for (let top = this.#heap[0]; top !== undefined && this.#readyAt.get(top.key) !== top.readyAt; top = this.#heap[0])
      this.#pop();
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent];
      if (above === undefined || above.readyAt <= entry.readyAt) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): Entry | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      let smallestAt = last.readyAt;
      const l = heap[left];
      if (l !== undefined && l.readyAt < smallestAt) {
        smallest = left;
        smallestAt = l.readyAt;
      }
      const r = heap[right];
      if (r !== undefined && r.readyAt < smallestAt) smallest = right;
      if (smallest === i) break;
      const child = heap[smallest];
      if (child === undefined) break;
      heap[i] = child;
      i = smallest;
    }
    heap[i] = last;
    return top;
  }
}
