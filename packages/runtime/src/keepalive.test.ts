import { EventEmitter } from "node:events";
import { describe, expect, it, vi } from "vitest";
import { keepAlive } from "./keepalive.ts";

// A pure timing rule, tested with fake timers and a socket that records calls.
class Socket extends EventEmitter {
  pings = 0;
  terminated = false;
  ping(): void {
    this.pings++;
  }
  terminate(): void {
    this.terminated = true;
  }
}

describe("keepAlive", () => {
  it("pings every interval, keeps a peer that answers, and drops one that does not", () => {
    vi.useFakeTimers();
    try {
      const socket = new Socket();
      keepAlive(socket, 1000);
      vi.advanceTimersByTime(1000);
      expect(socket.pings).toBe(1);
      socket.emit("pong");
      vi.advanceTimersByTime(1000);
      expect(socket.pings).toBe(2);
      expect(socket.terminated).toBe(false);
      vi.advanceTimersByTime(1000);
      expect(socket.terminated).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("stops when the socket closes", () => {
    vi.useFakeTimers();
    try {
      const socket = new Socket();
      keepAlive(socket, 1000);
      socket.emit("close");
      vi.advanceTimersByTime(5000);
      expect(socket.pings).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
