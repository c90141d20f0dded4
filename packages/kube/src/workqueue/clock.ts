// Time as the work queue, its rate limiters and expectations see it, injected
// so that unit tests can move it by hand.

export interface Clock {
  /** Milliseconds; only differences between readings matter. */
  now(): number;
  setTimeout(fn: () => void, ms: number): { cancel(): void };
}

export const realClock: Clock = {
  // Monotonic, so that a wall-clock step cannot make a backoff or a token
  // bucket run backwards.
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, ms);
    return {
      cancel: () => {
        clearTimeout(timer);
      },
    };
  },
};
