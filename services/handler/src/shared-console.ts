import type { Socket } from "node:net";
import { type ConsoleSharingMessage, parseSharingCommand } from "@kubevirt-ts/vm-rules";
import { type PipeBounds, SLOW_PEER_CLOSE_CODE, endSession, sendWithBackpressure } from "@kubevirt-ts/runtime";
import type { WebSocket } from "ws";
import { limits } from "./limits.ts";
import { RfbInputFilter, RfbProtocolError } from "./rfb-input.ts";

// A serial console or a VNC display watched by several viewers, while one
// of them holds the keyboard: what the guest shows reaches every viewer, what
// a viewer types reaches the guest only from the one who holds the keyboard.
// The first to come holds it; a viewer may ask for it, and the holder gives
// it; when the holder leaves, the viewer who came first after them takes it.
// Messages: vm-rules' console-sharing.ts.
//
// The serial console is one connection to QEMU's socket (it takes one client
// at a time), its output sent to every viewer. The display is a connection
// to QEMU's VNC server for each viewer (it serves many, each at its own pace
// and pixel format), each viewer's input cut into RFB messages so that only
// the holder's keys and pointer pass (rfb-input.ts).

/**
 * Sends QEMU's bytes to a viewer's websocket, pausing the socket while the viewer is behind (limits.viewerPipe); a
 * viewer that stays behind is cut off.
 */
export function pipeToViewer(from: Socket, ws: WebSocket, bounds: PipeBounds = limits.viewerPipe): void {
  const send = sendWithBackpressure(from, ws, bounds, (why) => {
    endSession(ws, SLOW_PEER_CLOSE_CODE, `this viewer ${why}: its session ended`, bounds.closeGraceMs);
  });
  from.on("data", (chunk: Buffer) => {
    send(chunk, true);
  });
}

/** Writes a viewer's input to QEMU's socket, pausing the viewer's websocket while QEMU (the guest) takes no more. */
export function writeToGuest(to: Socket, ws: WebSocket, bytes: Buffer): void {
  if (to.write(bytes) || ws.isPaused) return;
  ws.pause();
  to.once("drain", () => {
    ws.resume();
  });
}

interface Viewer {
  ws: WebSocket;
  who: string;
}

/** Who watches and who holds the keyboard, and the sharing's messages with each viewer. */
class KeyboardSharing {
  readonly viewers: Viewer[] = [];
  private holder: Viewer | undefined;
  private asking: Viewer | undefined;
  private readonly empty: () => void;

  /** `empty` is called when the last viewer has gone. */
  constructor(empty: () => void) {
    this.empty = empty;
  }

  /** Adds a viewer; its binary frames go to `input`, with whether it holds the keyboard as they come. */
  join(ws: WebSocket, who: string, input: (bytes: Buffer, holds: boolean) => void): void {
    const viewer = { ws, who };
    this.viewers.push(viewer);
    this.holder ??= viewer;
    ws.on("message", (data: Buffer | ArrayBuffer | Buffer[], binary: boolean) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (binary) {
        input(bytes, this.holder === viewer);
        return;
      }
      const command = parseSharingCommand(bytes.toString("utf8"));
      if (command?.type === "request" && this.holder !== viewer) {
        this.asking = viewer;
        if (this.holder) this.send(this.holder, { type: "request", from: who });
      } else if (
        command?.type === "grant" &&
        this.holder === viewer &&
        this.asking &&
        this.viewers.includes(this.asking)
      ) {
        this.holder = this.asking;
        this.asking = undefined;
        this.announce();
      }
    });
    ws.on("close", () => {
      this.leave(viewer);
    });
    this.announce();
  }

  closeAll(reason: string, code = 1000): void {
    for (const viewer of [...this.viewers]) viewer.ws.close(code, reason);
  }

  private leave(viewer: Viewer): void {
    const at = this.viewers.indexOf(viewer);
    if (at < 0) return;
    this.viewers.splice(at, 1);
    if (this.asking === viewer) this.asking = undefined;
    if (this.holder === viewer) this.holder = this.viewers[0];
    if (this.viewers.length === 0) {
      this.empty();
      return;
    }
    this.announce();
  }

  private announce(): void {
    for (const viewer of this.viewers)
      this.send(viewer, {
        type: "state",
        holder: this.holder?.who ?? "",
        you: this.holder === viewer,
        viewers: this.viewers.length,
      });
  }

  private send(viewer: Viewer, message: ConsoleSharingMessage): void {
    if (viewer.ws.readyState === viewer.ws.OPEN) viewer.ws.send(JSON.stringify(message), { binary: false });
  }
}

/** What the handler's console server keeps of a console several viewers share. */
export interface SharedSession {
  readonly size: number;
  /** Ends every viewer's session: a session that does not share took over. */
  close(reason: string): void;
}

/** The serial console, over one connection to QEMU's socket. */
export class SharedConsole implements SharedSession {
  private readonly sharing: KeyboardSharing;
  private readonly unix: Socket;

  /** `ended` is called once the last viewer has gone or the guest's socket closed. */
  constructor(unix: Socket, ended: () => void) {
    this.unix = unix;
    this.sharing = new KeyboardSharing(() => {
      unix.destroy();
    });
    unix.on("data", (chunk: Buffer) => {
      for (const viewer of [...this.sharing.viewers]) {
        if (viewer.ws.readyState !== viewer.ws.OPEN) continue;
        if (viewer.ws.bufferedAmount > limits.sharedConsoleBehindBytes)
          endSession(
            viewer.ws,
            SLOW_PEER_CLOSE_CODE,
            "this viewer could not keep up with the console's output",
            limits.viewerPipe.closeGraceMs,
          );
        else viewer.ws.send(chunk, { binary: true });
      }
    });
    unix.on("close", () => {
      this.sharing.closeAll("the VM's console closed");
      ended();
    });
  }

  get size(): number {
    return this.sharing.viewers.length;
  }

  join(ws: WebSocket, who: string): void {
    // Keystrokes of anyone but the holder go nowhere.
    this.sharing.join(ws, who, (bytes, holds) => {
      if (holds) writeToGuest(this.unix, ws, bytes);
    });
  }

  close(reason: string): void {
    this.sharing.closeAll(reason);
    this.unix.destroy();
  }
}

/** The VNC display, over a connection to QEMU's VNC server for each viewer. */
export class SharedDisplay implements SharedSession {
  private readonly sharing: KeyboardSharing;

  /** `ended` is called once the last viewer has gone. */
  constructor(ended: () => void) {
    this.sharing = new KeyboardSharing(ended);
  }

  get size(): number {
    return this.sharing.viewers.length;
  }

  /** Adds a viewer with its own connection to QEMU's VNC server. */
  join(ws: WebSocket, who: string, unix: Socket): void {
    const filter = new RfbInputFilter();
    pipeToViewer(unix, ws);
    unix.on("close", () => {
      if (ws.readyState === ws.OPEN) ws.close(1000, "the VM's display closed");
    });
    unix.on("error", () => {
      ws.terminate();
    });
    ws.on("close", () => {
      unix.destroy();
    });
    let refused = false;
    this.sharing.join(ws, who, (bytes, holds) => {
      if (refused) return;
      try {
        const pass = filter.push(bytes, holds);
        if (pass.length > 0) writeToGuest(unix, ws, pass);
      } catch (error) {
        // Whatever went wrong with this viewer's bytes (an allocation too), it ends this viewer's session, not the
        // handler.
        refused = true;
        unix.destroy();
        const reason = error instanceof RfbProtocolError ? error.message : "its input could not be handled";
        // A close frame's reason holds at most 123 bytes.
        ws.close(1008, `the display could not be shared: ${reason}`.slice(0, 120));
      }
    });
  }

  close(reason: string): void {
    this.sharing.closeAll(reason);
  }
}
