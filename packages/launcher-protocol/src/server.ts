import type { Socket } from "node:net";
import { InvalidUtf8Error, LineReader, LineTooLongError } from "./lines.ts";
import {
  type CheckedParams,
  type ErrorCode,
  MAX_ERROR_MESSAGE_LENGTH,
  MAX_REQUEST_LINE_BYTES,
  type Method,
  PROTOCOL_VERSION,
  type Response,
  type Result,
  describeIssues,
  launcherMethods,
  requestSchema,
} from "./protocol.ts";

// The launcher's side of the protocol, for one connection: each request
// line is checked (framing, shape, version, the method's params) before
// its handler runs, and every answer is one line.

/** The launcher's implementation of every method, typed by the protocol. */
export type Handlers = { [M in Method]: (params: CheckedParams<M>) => Promise<Result<M>> };

/** An error a handler throws to answer with a code other than Failed. */
export class RpcError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

function failure(id: number, code: ErrorCode, message: string): Response {
  return {
    id,
    error: {
      code,
      message:
        message.length > MAX_ERROR_MESSAGE_LENGTH ? `${message.slice(0, MAX_ERROR_MESSAGE_LENGTH - 1)}…` : message,
    },
  };
}

/** Runs the method's handler with params its schema has checked. */
function run(handlers: Handlers, method: Method, params: unknown): Promise<unknown> {
  return (handlers[method] as (checked: unknown) => Promise<unknown>)(params);
}

/** The answer to one request line. */
export async function answer(line: string, handlers: Handlers): Promise<Response> {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    return failure(0, "BadRequest", `not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = requestSchema.safeParse(json);
  if (!parsed.success) {
    const id = (json as { id?: unknown } | null)?.id;
    return failure(
      typeof id === "number" && Number.isSafeInteger(id) && id > 0 ? id : 0,
      "BadRequest",
      `not a request: ${describeIssues(parsed.error, "request")}`,
    );
  }
  const request = parsed.data;
  if (request.version !== PROTOCOL_VERSION) {
    return failure(
      request.id,
      "UnsupportedVersion",
      `this launcher speaks version ${String(PROTOCOL_VERSION)}, not ${String(request.version)}`,
    );
  }
  const params = launcherMethods[request.method].params.safeParse(request.params);
  if (!params.success)
    return failure(
      request.id,
      "BadRequest",
      `invalid params of ${request.method}: ${describeIssues(params.error, "params")}`,
    );
  try {
    return { id: request.id, result: await run(handlers, request.method, params.data) };
  } catch (error) {
    return failure(
      request.id,
      error instanceof RpcError ? error.code : "Failed",
      error instanceof Error ? error.message : String(error),
    );
  }
}

/** Serves the protocol on one connection until it closes; a line over MAX_REQUEST_LINE_BYTES ends it. */
export function serveConnection(socket: Socket, handlers: Handlers, maxLineBytes = MAX_REQUEST_LINE_BYTES): void {
  const lines = new LineReader(maxLineBytes);
  const reply = (response: Response) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(response)}\n`);
  };
  socket.on("data", (chunk: Buffer) => {
    let received: string[];
    try {
      received = lines.push(chunk);
    } catch (error) {
      if (!(error instanceof LineTooLongError || error instanceof InvalidUtf8Error)) throw error;
      // The stream cannot be followed past this: say why, and hang up.
      socket.end(`${JSON.stringify(failure(0, "BadRequest", `${error.message}; closing the connection`))}\n`);
      socket.removeAllListeners("data");
      return;
    }
    for (const line of received) void answer(line, handlers).then(reply);
  });
  socket.on("error", () => socket.destroy());
}
