import { chmod, rm } from "node:fs/promises";
import { type Server, type Socket, createServer } from "node:net";
import type { Logger } from "@kubevirt-ts/runtime";
import { type Method, PROTOCOL_VERSION, type Request, type Response, requestSchema } from "./protocol.ts";

export type Handlers = Record<Method, (params: unknown) => Promise<unknown>>;

export class RpcError extends Error {
  readonly code: "NotDefined" | "Failed" | "BadRequest";
  constructor(code: "NotDefined" | "Failed" | "BadRequest", message: string) {
    super(message);
    this.code = code;
  }
}

async function answer(line: string, handlers: Handlers): Promise<Response> {
  let request: Request;
  try {
    request = requestSchema.parse(JSON.parse(line));
  } catch (error) {
    return { id: 0, error: { code: "BadRequest", message: `not a request: ${String(error)}` } };
  }
  if (request.version !== PROTOCOL_VERSION) {
    return { id: request.id, error: { code: "UnsupportedVersion", message: `this launcher speaks version ${String(PROTOCOL_VERSION)}, not ${String(request.version)}` } };
  }
  try {
    return { id: request.id, result: (await handlers[request.method](request.params)) ?? null };
  } catch (error) {
    const code = error instanceof RpcError ? error.code : "Failed";
    return { id: request.id, error: { code, message: error instanceof Error ? error.message : String(error) } };
  }
}

function serve(socket: Socket, handlers: Handlers): void {
  let buffer = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf("\n");
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      void answer(line, handlers).then((response) => socket.write(`${JSON.stringify(response)}\n`));
      newline = buffer.indexOf("\n");
    }
  });
  socket.on("error", () => socket.destroy());
}

/** Serves the protocol on a unix socket that only the launcher's user and group may use. */
export async function startRpcServer(path: string, handlers: Handlers, log: Logger): Promise<Server> {
  await rm(path, { force: true });
  const server = createServer((socket) => {
    serve(socket, handlers);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  await chmod(path, 0o660);
  log.info("serving the launcher protocol", { socket: path, version: PROTOCOL_VERSION });
  return server;
}
