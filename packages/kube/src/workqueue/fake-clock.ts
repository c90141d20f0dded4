import type { Clock } from "./clock.ts";

// A clock for unit tests of pure logic: time stands still until advance() is
// called, which runs the timers that fall due in the order of their times.

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: FakeTimer[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): { cancel(): void } {
    const timer: FakeTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return {
      cancel: () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
      },
    };
  }

  /** How many timers are scheduled and not yet run or cancelled. */
  pendingTimers(): number {
    return this.#timers.length;
  }

  advance(ms: number): void {
    const target = this.#now + ms;
    for (let next = this.#nextDue(target); next !== undefined; next = this.#nextDue(target)) {
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = next.at;
      next.fn();
    }
    this.#now = target;
  }

  #nextDue(target: number): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const timer of this.#timers) {
      if (timer.at > target) continue;
      if (next === undefined || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq)) next = timer;
    }
    return next;
  }
}
