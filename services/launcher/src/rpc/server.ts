import { chmod, rm } from "node:fs/promises";
import { type Server, createServer } from "node:net";
import { type Handlers, PROTOCOL_VERSION, serveConnection } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";

// The launcher's socket: the protocol (methods, checks, framing) is
// @kubevirt-ts/launcher-protocol's; this file only puts it on a unix socket.

/** Serves the protocol on a unix socket that only the launcher's user and group may use. */
export async function startRpcServer(path: string, handlers: Handlers, log: Logger): Promise<Server> {
  await rm(path, { force: true });
  const server = createServer((socket) => {
    serveConnection(socket, handlers);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  await chmod(path, 0o660);
  log.info("serving the launcher protocol", { socket: path, version: PROTOCOL_VERSION });
  return server;
}
