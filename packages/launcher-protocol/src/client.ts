import { type Socket, connect } from "node:net";
import {
  LauncherBusyError,
  LauncherCallError,
  type LauncherError,
  LauncherProtocolError,
  LauncherTimeoutError,
  LauncherUnreachableError,
} from "./errors.ts";
import { InvalidUtf8Error, LineReader, LineTooLongError } from "./lines.ts";
import {
  MAX_RESPONSE_LINE_BYTES,
  type Method,
  PROTOCOL_VERSIONS,
  type Params,
  type Result,
  describeIssues,
  describeVersions,
  launcherMethods,
  methodSince,
  responseSchema,
} from "./protocol.ts";

// The handler's side of the launcher protocol. Whatever the launcher sends,
// the client's memory stays bounded (one line of MAX_RESPONSE_LINE_BYTES at
// most, MAX_PENDING_CALLS calls), no exception leaves the socket's event
// handlers, and every call ends: with its checked result, the launcher's
// error, a timeout, or the protocol violation that made the client drop
// the connection. A connection begins with `hello`, which finds the
// version both sides speak; every call then names it, and a method that
// version lacks is refused here, never sent.

/** How many calls may wait for answers on one connection. */
export const MAX_PENDING_CALLS = 32;
/** How long connecting to a launcher's socket may take. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** How many timed-out calls are remembered, so that their late answers are dropped rather than taken as unknown. */
const MAX_LATE_IDS = 256;

export interface ConnectOptions {
  /** How long connecting, and then agreeing on a version, may take each. */
  timeoutMs?: number;
  /** The versions offered: this release's (PROTOCOL_VERSIONS), or fewer to speak as an earlier release. */
  versions?: readonly number[];
}

export interface CallOptions {
  /** How long to wait for the answer; the method's default otherwise. */
  timeoutMs?: number;
}

type CallArgs<M extends Method> =
  undefined extends Params<M>
    ? [params?: Params<M>, options?: CallOptions]
    : [params: Params<M>, options?: CallOptions];

interface Waiter {
  method: Method;
  resolve: (value: unknown) => void;
  reject: (error: LauncherError) => void;
}

export class LauncherClient {
  private readonly socket: Socket;
  private readonly lines = new LineReader(MAX_RESPONSE_LINE_BYTES);
  private nextId = 1;
  private readonly pending = new Map<number, Waiter>();
  private readonly late = new Set<number>();
  private broken: LauncherError | undefined;
  /** The version both sides speak, once `hello` found it. */
  private negotiated = 1;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      try {
        this.receive(chunk);
      } catch (error) {
        // receive() throws nothing by design; should it ever, the connection goes, the process stays.
        this.fail(new LauncherProtocolError("InvalidResponse", error instanceof Error ? error.message : String(error)));
      }
    });
    socket.on("error", (error) => {
      this.fail(
        new LauncherUnreachableError(`the connection to the launcher failed: ${error.message}`, { cause: error }),
      );
    });
    socket.on("close", () => {
      this.fail(new LauncherUnreachableError("the launcher closed the connection"));
    });
  }

  /** Connects to a launcher's socket and agrees on the protocol's version with it. */
  static async connect(path: string, options: ConnectOptions = {}): Promise<LauncherClient> {
    const { timeoutMs = CONNECT_TIMEOUT_MS, versions = PROTOCOL_VERSIONS } = options;
    const client = await new Promise<LauncherClient>((resolve, reject) => {
      const socket = connect(path);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new LauncherTimeoutError("the connection", timeoutMs));
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(new LauncherClient(socket));
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(new LauncherUnreachableError(`cannot connect to the launcher: ${error.message}`, { cause: error }));
      });
    });
    try {
      await client.negotiate(versions, timeoutMs);
    } catch (error) {
      client.socket.destroy();
      throw error;
    }
    return client;
  }

  /** The protocol version spoken on this connection. */
  get version(): number {
    return this.negotiated;
  }

  /**
   * Asks the launcher for the highest version of `versions` it speaks too. A launcher from before `hello` answers it
   * BadRequest (an unknown method): it speaks version 1.
   */
  private async negotiate(versions: readonly number[], timeoutMs: number): Promise<void> {
    const highest = Math.max(...versions);
    const helloSince = methodSince("hello");
    if (highest < helloSince) {
      this.negotiated = highest;
      return;
    }
    let chosen: number;
    try {
      ({ version: chosen } = await this.send("hello", { versions: [...versions] }, { timeoutMs }, helloSince));
    } catch (error) {
      if (!(error instanceof LauncherCallError && error.code === "BadRequest")) throw error;
      if (!versions.includes(1))
        throw new LauncherCallError(
          "UnsupportedVersion",
          `the launcher speaks only version 1 (it has no hello), this handler ${describeVersions(versions)}`,
        );
      chosen = 1;
    }
    if (!versions.includes(chosen)) {
      const violation = new LauncherProtocolError(
        "InvalidResult",
        `the launcher chose version ${String(chosen)}, which was not offered (${describeVersions(versions)})`,
      );
      this.fail(violation);
      throw violation;
    }
    this.negotiated = chosen;
  }

  /** The bytes held of an unfinished line from the launcher (never more than MAX_RESPONSE_LINE_BYTES). */
  get bufferedBytes(): number {
    return this.lines.bufferedBytes;
  }

  /** Calls a method; resolves with its result, checked against the method's schema. */
  call<M extends Exclude<Method, "hello">>(method: M, ...[params, options]: CallArgs<M>): Promise<Result<M>> {
    return this.send(method, params, options, this.negotiated);
  }

  private send<M extends Method>(
    method: M,
    params: Params<M> | undefined,
    options: CallOptions | undefined,
    version: number,
  ): Promise<Result<M>> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.pending.size >= MAX_PENDING_CALLS) return Promise.reject(new LauncherBusyError(MAX_PENDING_CALLS));
    const id = this.nextId++;
    const timeoutMs = options?.timeoutMs ?? launcherMethods[method].timeoutMs;
    return new Promise<Result<M>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.late.add(id);
        if (this.late.size > MAX_LATE_IDS) this.late.delete(this.late.values().next().value ?? id);
        reject(new LauncherTimeoutError(method, timeoutMs));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value as Result<M>);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.socket.write(`${JSON.stringify({ version, id, method, params })}\n`);
    });
  }

  /** Calls back once the connection is gone. */
  onClose(callback: () => void): void {
    this.socket.once("close", callback);
  }

  close(): void {
    this.socket.end();
  }

  private receive(chunk: Buffer): void {
    let lines: string[];
    try {
      lines = this.lines.push(chunk);
    } catch (error) {
      if (error instanceof LineTooLongError) this.fail(new LauncherProtocolError("LineTooLong", error.message));
      else if (error instanceof InvalidUtf8Error) this.fail(new LauncherProtocolError("InvalidUtf8", error.message));
      else throw error;
      return;
    }
    for (const line of lines) {
      if (this.broken) return;
      const violation = this.answer(line);
      if (violation) this.fail(violation);
    }
  }

  /** Settles the call the line answers; returns what the line breaks of the protocol, if anything. */
  private answer(line: string): LauncherProtocolError | undefined {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (error) {
      return new LauncherProtocolError(
        "InvalidJson",
        `a line that is not JSON (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    const parsed = responseSchema.safeParse(json);
    if (!parsed.success) return new LauncherProtocolError("InvalidResponse", describeIssues(parsed.error, "response"));
    const response = parsed.data;
    const waiter = this.pending.get(response.id);
    if (!waiter) {
      return this.late.delete(response.id)
        ? undefined
        : new LauncherProtocolError(
            "UnknownId",
            `an answer to call ${String(response.id)}, which is not waiting for one`,
          );
    }
    this.pending.delete(response.id);
    if ("error" in response) {
      waiter.reject(new LauncherCallError(response.error.code, response.error.message));
      return undefined;
    }
    const result = launcherMethods[waiter.method].result.safeParse(response.result);
    if (!result.success) {
      const violation = new LauncherProtocolError(
        "InvalidResult",
        `the answer to ${waiter.method} is not its result: ${describeIssues(result.error, "result")}`,
      );
      waiter.reject(violation);
      return violation;
    }
    waiter.resolve(result.data);
    return undefined;
  }

  /** Ends every waiting call with the error; after a violation, every later call too, and the connection is dropped. */
  private fail(error: LauncherError): void {
    this.broken ??= error;
    for (const waiter of this.pending.values()) waiter.reject(this.broken);
    this.pending.clear();
    if (!this.socket.destroyed) this.socket.destroy();
  }
}
