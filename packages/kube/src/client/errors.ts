import type { Status } from "./types.ts";

/** An error answer of the API server, with its Status. */
export class ApiError extends Error {
  readonly code: number;
  readonly status: Status;

  constructor(code: number, status: Status, context: string) {
    super(`${context}: ${String(code)} ${status.reason ?? ""}: ${status.message ?? "no message"}`);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
  }
}

export const isNotFound = (error: unknown): boolean => error instanceof ApiError && error.code === 404;
export const isForbidden = (error: unknown): boolean => error instanceof ApiError && error.code === 403;
export const isConflict = (error: unknown): boolean => error instanceof ApiError && error.code === 409;
export const isAlreadyExists = (error: unknown): boolean =>
  error instanceof ApiError && error.code === 409 && error.status.reason === "AlreadyExists";
/** The resourceVersion a watch or list asked for is older than etcd keeps: list again. */
export const isGone = (error: unknown): boolean =>
  error instanceof ApiError &&
  (error.code === 410 || error.status.reason === "Expired" || error.status.reason === "Gone");
