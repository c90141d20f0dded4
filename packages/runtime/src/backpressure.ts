// Backpressure for a pipe into a websocket: what is read from one side is
// sent to a websocket, and reading pauses while the websocket holds more than
// a bound unsent (its peer reads slower than the other side writes); it
// resumes once most of it has gone out. A peer that stays behind too long, or
// falls behind past a hard cap, is cut off: its own session ends, nothing else.

/** The bounds of one pipe into a websocket, in bytes the websocket holds unsent. */
export interface PipeBounds {
  /** Reading pauses once the websocket holds more than this. */
  highBytes: number;
  /** ... and resumes once it is down to this. */
  lowBytes: number;
  /** A websocket that holds more than this (what was read before the pause took hold) is cut off at once. */
  maxBytes: number;
  /** A websocket that stays above highBytes this long (its peer reads nothing) is cut off. */
  stallMs: number;
  /**
   * How long a peer that was cut off has to read what it was sent and the close frame before its socket is destroyed.
   */
  closeGraceMs: number;
}

/** What a pipe reads from: a socket, or a websocket (ws's), either of which can pause. */
export interface Pausable {
  pause(): void;
  resume(): void;
}

/** What a pipe writes to: the `ws` package's WebSocket. */
export interface BufferedSocket {
  readonly bufferedAmount: number;
  readonly readyState: number;
  readonly OPEN: number;
  send(data: Buffer, options: { binary: boolean }, cb: (error?: Error) => void): void;
  on(event: "close", listener: () => void): unknown;
}

/** The close code of a session cut off for reading slower than it is sent to: 1013, "try again later". */
export const SLOW_PEER_CLOSE_CODE = 1013;

/** What endSession needs of a websocket: the `ws` package's WebSocket has it. */
export interface Closable {
  readonly readyState: number;
  readonly CLOSED: number;
  close(code: number, reason: string): void;
  terminate(): void;
  on(event: "close", listener: () => void): unknown;
}

/**
 * Ends a peer's session with a close code and reason (at most 120 characters, within a close frame's 123 bytes),
 * and destroys its socket if it has not closed within the grace: a peer that reads nothing never reads the close
 * frame queued behind what it left unread, and what it left is freed only then.
 */
export function endSession(ws: Closable, code: number, reason: string, graceMs: number): void {
  if (ws.readyState === ws.CLOSED) return;
  ws.close(code, reason.slice(0, 120));
  const timer = setTimeout(() => {
    ws.terminate();
  }, graceMs);
  ws.on("close", () => {
    clearTimeout(timer);
  });
}

/**
 * A send into `to` that pauses `from` while `to` is behind (bounds), and resumes it once `to` caught up. Past the
 * hard cap, or behind longer than the stall bound, `cutOff` is called once with why, in words ("read nothing for 30
 * s"), and nothing more is sent.
 */
export function sendWithBackpressure(
  from: Pausable,
  to: BufferedSocket,
  bounds: PipeBounds,
  cutOff: (reason: string) => void,
): (data: Buffer, binary: boolean) => void {
  let stalled: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  const end = (reason: string) => {
    if (ended) return;
    ended = true;
    clearTimeout(stalled);
    cutOff(reason);
  };
  // Called as each frame is handed to the kernel: the last one behind brings the buffer down to 0.
  const sent = () => {
    if (stalled === undefined || ended || to.bufferedAmount > bounds.lowBytes) return;
    clearTimeout(stalled);
    stalled = undefined;
    from.resume();
  };
  to.on("close", () => {
    ended = true;
    clearTimeout(stalled);
  });
  return (data, binary) => {
    if (ended || to.readyState !== to.OPEN) return;
    to.send(data, { binary }, sent);
    const behind = to.bufferedAmount;
    if (behind > bounds.maxBytes) {
      end(`fell ${String(behind)} bytes behind (at most ${String(bounds.maxBytes)})`);
    } else if (behind > bounds.highBytes && stalled === undefined) {
      from.pause();
      stalled = setTimeout(() => {
        end(`read nothing for ${String(Math.round(bounds.stallMs / 1000))} s`);
      }, bounds.stallMs);
    }
  };
}
