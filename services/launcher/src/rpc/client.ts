import { type Socket, connect } from "node:net";
import { type DomainStatus, type Method, PROTOCOL_VERSION, type Response } from "./protocol.ts";

// The handler's side of the launcher protocol.

export { type DomainStatus, type GuestOsInfo, SocketsVolume } from "./protocol.ts";

export class LauncherClient {
  private readonly socket: Socket;
  private nextId = 1;
  private buffer = "";
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      this.buffer += chunk;
      let newline = this.buffer.indexOf("\n");
      while (newline >= 0) {
        const response = JSON.parse(this.buffer.slice(0, newline)) as Response;
        this.buffer = this.buffer.slice(newline + 1);
        const waiter = this.pending.get(response.id);
        this.pending.delete(response.id);
        if ("error" in response) waiter?.reject(new Error(`${response.error.code}: ${response.error.message}`));
        else waiter?.resolve(response.result);
        newline = this.buffer.indexOf("\n");
      }
    });
    const failAll = (error: Error) => {
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
    };
    socket.on("error", failAll);
    socket.on("close", () => {
      failAll(new Error("the launcher closed the connection"));
    });
  }

  static connect(path: string): Promise<LauncherClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      socket.once("connect", () => {
        resolve(new LauncherClient(socket));
      });
      socket.once("error", reject);
    });
  }

  call(method: Method, params?: unknown, timeoutMs = 120_000): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`the launcher did not answer ${method} within ${String(timeoutMs)} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.socket.write(`${JSON.stringify({ version: PROTOCOL_VERSION, id, method, params })}\n`);
    });
  }

  /** Calls back once the connection is gone. */
  onClose(callback: () => void): void {
    this.socket.once("close", callback);
  }

  async state(): Promise<DomainStatus> {
    return (await this.call("state")) as DomainStatus;
  }

  close(): void {
    this.socket.end();
  }
}
