import type { Socket } from "node:net";
import { type ConsoleSharingMessage, parseSharingCommand } from "@kubevirt-ts/kubevirt-api";
import type { WebSocket } from "ws";

// One serial console watched by several viewers over one connection to
// QEMU's socket (it takes one client at a time): what the guest prints goes
// to every viewer, what a viewer types reaches the guest only from the one
// who holds the keyboard. The first to come holds it; a viewer may ask for
// it, and the holder gives it; when the holder leaves, the viewer who came
// first after them takes it. Messages: kubevirt-api's console-sharing.ts.

/** A viewer that falls this far behind the guest's output is cut off rather than holding the others back. */
const MAX_BEHIND_BYTES = 4 * 1024 * 1024;

interface Viewer {
  ws: WebSocket;
  who: string;
}

export class SharedConsole {
  private readonly viewers: Viewer[] = [];
  private holder: Viewer | undefined;
  private asking: Viewer | undefined;
  private readonly unix: Socket;
  private readonly ended: () => void;

  /** `ended` is called once the last viewer has gone or the guest's socket closed. */
  constructor(unix: Socket, ended: () => void) {
    this.unix = unix;
    this.ended = ended;
    unix.on("data", (chunk: Buffer) => {
      for (const viewer of [...this.viewers]) {
        if (viewer.ws.bufferedAmount > MAX_BEHIND_BYTES) viewer.ws.close(1013, "this viewer could not keep up with the console's output");
        else viewer.ws.send(chunk, { binary: true });
      }
    });
    unix.on("close", () => {
      for (const viewer of [...this.viewers]) viewer.ws.close(1000, "the VM's console closed");
      this.ended();
    });
  }

  get size(): number {
    return this.viewers.length;
  }

  join(ws: WebSocket, who: string): void {
    const viewer = { ws, who };
    this.viewers.push(viewer);
    this.holder ??= viewer;
    ws.on("message", (data: Buffer | ArrayBuffer | Buffer[], binary: boolean) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (binary) {
        // Keystrokes of anyone but the holder go nowhere.
        if (this.holder === viewer) this.unix.write(bytes);
        return;
      }
      const command = parseSharingCommand(bytes.toString("utf8"));
      if (command?.type === "request" && this.holder !== viewer) {
        this.asking = viewer;
        if (this.holder) this.send(this.holder, { type: "request", from: who });
      } else if (command?.type === "grant" && this.holder === viewer && this.asking && this.viewers.includes(this.asking)) {
        this.holder = this.asking;
        this.asking = undefined;
        this.announce();
      }
    });
    ws.on("close", () => { this.leave(viewer); });
    this.announce();
  }

  /** Ends every viewer's session: a session that does not share took over. */
  close(reason: string): void {
    for (const viewer of [...this.viewers]) viewer.ws.close(1000, reason);
    this.unix.destroy();
  }

  private leave(viewer: Viewer): void {
    const at = this.viewers.indexOf(viewer);
    if (at < 0) return;
    this.viewers.splice(at, 1);
    if (this.asking === viewer) this.asking = undefined;
    if (this.holder === viewer) this.holder = this.viewers[0];
    if (this.viewers.length === 0) {
      this.unix.destroy();
      return;
    }
    this.announce();
  }

  private announce(): void {
    for (const viewer of this.viewers) this.send(viewer, { type: "state", holder: this.holder?.who ?? "", you: this.holder === viewer, viewers: this.viewers.length });
  }

  private send(viewer: Viewer, message: ConsoleSharingMessage): void {
    if (viewer.ws.readyState === viewer.ws.OPEN) viewer.ws.send(JSON.stringify(message), { binary: false });
  }
}
