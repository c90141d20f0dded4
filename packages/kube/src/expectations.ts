import { type Clock, realClock } from "./workqueue/clock.ts";

// Controller expectations, as in Kubernetes' ControllerExpectations: after a
// controller creates children with generateName (or deletes some), its cache
// may not show them yet, and acting on that stale view would create or delete
// again. The controller records how many events it expects and waits to sync
// the key until the informer has observed them all, or until the record is so
// old that an event was surely missed.

/**
 * How long a controller waits before it looks again at a key whose expectations
 * are not met. The informer's event for the awaited child normally brings the key
 * back sooner; this is the fallback when that event is late, one value for every
 * controller so none polls harder than the others.
 */
export const EXPECTATIONS_RECHECK_MS = 2_000;

interface ExpectationRecord {
  adds: number;
  dels: number;
  setAt: number;
}

export interface ExpectationsOptions {
  /** How long a record holds before the key may sync anyway; 5 minutes unless given. */
  ttlMs?: number;
  clock?: Clock;
}

export class Expectations {
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #records = new Map<string, ExpectationRecord>();

  constructor(options: ExpectationsOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 5 * 60 * 1000;
    this.#clock = options.clock ?? realClock;
  }

  /** Expects n creations for the key, replacing what was expected before. */
  expectCreations(key: string, n: number): void {
    this.#set(key, n, 0);
  }

  /** Expects n deletions for the key, replacing what was expected before. */
  expectDeletions(key: string, n: number): void {
    this.#set(key, 0, n);
  }

  creationObserved(key: string): void {
    this.lowerExpectations(key, 1, 0);
  }

  deletionObserved(key: string): void {
    this.lowerExpectations(key, 0, 1);
  }

  /** Expects more events for a key that has a record; a key without one is left alone. */
  raiseExpectations(key: string, adds: number, dels: number): void {
    const record = this.#records.get(key);
    if (record === undefined) return;
    record.adds += adds;
    record.dels += dels;
  }

  lowerExpectations(key: string, adds: number, dels: number): void {
    this.raiseExpectations(key, -adds, -dels);
  }

  /** Whether the key may sync: it has no record, all expected events were observed, or the record expired. */
  satisfied(key: string): boolean {
    const record = this.#records.get(key);
    if (record === undefined) return true;
    if (record.adds <= 0 && record.dels <= 0) return true;
    return this.#clock.now() - record.setAt > this.#ttlMs;
  }

  /** Forgets the key, e.g. once its object is gone from the cache. */
  deleteExpectations(key: string): void {
    this.#records.delete(key);
  }

  #set(key: string, adds: number, dels: number): void {
    this.#records.set(key, { adds, dels, setAt: this.#clock.now() });
  }
}
