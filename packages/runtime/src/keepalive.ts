// Pings a websocket peer at an interval and drops it when a ping went
// unanswered, so sessions through proxies and NAT that drop idle
// connections stay up, and dead peers do not hold sessions open.

/** What keepAlive needs of a websocket (the `ws` package's WebSocket has it). */
export interface Pingable {
  ping(): void;
  terminate(): void;
  on(event: "pong" | "close", listener: () => void): unknown;
}

export function keepAlive(socket: Pingable, intervalMs: number): void {
  let alive = true;
  socket.on("pong", () => (alive = true));
  const timer = setInterval(() => {
    if (!alive) {
      socket.terminate();
      return;
    }
    alive = false;
    socket.ping();
  }, intervalMs);
  socket.on("close", () => {
    clearInterval(timer);
  });
}
