import type { Socket } from "node:net";
import { InvalidUtf8Error, LineReader, LineTooLongError } from "./lines.ts";
import {
  type CheckedParams,
  type ErrorCode,
  MAX_ERROR_MESSAGE_LENGTH,
  MAX_REQUEST_LINE_BYTES,
  type Method,
  PROTOCOL_VERSIONS,
  type Response,
  type Result,
  commonVersion,
  describeIssues,
  describeVersions,
  launcherMethods,
  methodSince,
  requestSchema,
} from "./protocol.ts";

// The launcher's side of the protocol, for one connection: each request
// line is checked (framing, shape, version, the method's params) before
// its handler runs, and every answer is one line. Each request carries
// its version, so the launcher keeps nothing of `hello`: it answers any
// version it speaks, with the methods that version has.

/** The launcher's implementation of every method but `hello`, which the protocol answers itself; typed by it. */
export type Handlers = {
  [M in Exclude<Method, "hello">]: (params: CheckedParams<M>) => Promise<Result<M>>;
};

export interface ServeOptions {
  /** The longest request line; a longer one ends the connection. */
  maxLineBytes?: number;
  /** The versions spoken: this release's (PROTOCOL_VERSIONS), or fewer to speak as an earlier release. */
  versions?: readonly number[];
}

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
function run(handlers: Handlers, method: Exclude<Method, "hello">, params: unknown): Promise<unknown> {
  return (handlers[method] as (checked: unknown) => Promise<unknown>)(params);
}

/** The answer to `hello`: the highest version both sides speak. */
function hello(id: number, params: unknown, versions: readonly number[]): Response {
  const checked = launcherMethods.hello.params.safeParse(params);
  if (!checked.success)
    return failure(id, "BadRequest", `invalid params of hello: ${describeIssues(checked.error, "params")}`);
  const offered = checked.data.versions;
  const chosen = commonVersion(versions, offered);
  return chosen === undefined
    ? failure(
        id,
        "UnsupportedVersion",
        `this launcher speaks ${describeVersions(versions)}, the handler ${describeVersions(offered)}`,
      )
    : { id, result: { version: chosen } };
}

/** The answer to one request line, from a launcher that speaks `versions`. */
export async function answer(
  line: string,
  handlers: Handlers,
  versions: readonly number[] = PROTOCOL_VERSIONS,
): Promise<Response> {
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
  // A method newer than every version spoken is unknown here, as it is to the release before it.
  if (methodSince(request.method) > Math.max(...versions))
    return failure(request.id, "BadRequest", `not a request: request.method: unknown method ${request.method}`);
  // `hello` is answered whatever version its request names: it is how the two sides find one.
  if (request.method === "hello") return hello(request.id, request.params, versions);
  if (!versions.includes(request.version)) {
    return failure(
      request.id,
      "UnsupportedVersion",
      `this launcher speaks ${describeVersions(versions)}, not ${String(request.version)}`,
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
export function serveConnection(socket: Socket, handlers: Handlers, options: ServeOptions = {}): void {
  const { maxLineBytes = MAX_REQUEST_LINE_BYTES, versions = PROTOCOL_VERSIONS } = options;
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
    for (const line of received) void answer(line, handlers, versions).then(reply);
  });
  socket.on("error", () => socket.destroy());
}
