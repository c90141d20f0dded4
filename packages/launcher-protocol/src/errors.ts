import type { ErrorCode } from "./protocol.ts";

// What can go wrong when the handler calls a launcher. Each error has a
// reason, a CamelCase word the handler puts on the VMI's condition.

export abstract class LauncherError extends Error {
  abstract readonly reason: string;
}

/** What a launcher broke in the protocol. */
export type ProtocolViolation =
  "LineTooLong" | "InvalidUtf8" | "InvalidJson" | "InvalidResponse" | "UnknownId" | "InvalidResult";

/**
 * The launcher sent what the protocol does not allow: it is broken or
 * hostile. The connection is dropped and every call on it fails with this.
 */
export class LauncherProtocolError extends LauncherError {
  readonly reason = "LauncherProtocolViolation";
  readonly violation: ProtocolViolation;
  constructor(violation: ProtocolViolation, message: string) {
    super(`the launcher broke the protocol (${violation}): ${message}`);
    this.name = "LauncherProtocolError";
    this.violation = violation;
  }
}

/** The launcher did not answer in time. */
export class LauncherTimeoutError extends LauncherError {
  readonly reason = "LauncherTimeout";
  constructor(method: string, timeoutMs: number) {
    super(`the launcher did not answer ${method} within ${String(timeoutMs)} ms`);
    this.name = "LauncherTimeoutError";
  }
}

/** The connection is gone, or could not be made. */
export class LauncherUnreachableError extends LauncherError {
  readonly reason = "LauncherUnreachable";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LauncherUnreachableError";
  }
}

/** Too many calls are waiting for this launcher already. */
export class LauncherBusyError extends LauncherError {
  readonly reason = "LauncherBusy";
  constructor(limit: number) {
    super(`${String(limit)} calls are already waiting for this launcher's answers; try again later`);
    this.name = "LauncherBusyError";
  }
}

/** The launcher answered the call with an error. */
export class LauncherCallError extends LauncherError {
  readonly code: ErrorCode;
  get reason(): string {
    return `Launcher${this.code}`;
  }
  constructor(code: ErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = "LauncherCallError";
    this.code = code;
  }
}
