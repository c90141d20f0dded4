import { once } from "node:events";
import { chmod, rm } from "node:fs/promises";
import { type Server, type Socket, connect, createServer } from "node:net";

// A unix socket whose every connection is joined to a new one to another
// unix socket: how a migration target shows its libvirt (whose socket is
// in the launcher's own folder) in its sockets volume, where the handler's
// proxy reaches it.

/** Joins two byte streams both ways, with backpressure; either side's end or failure ends both. */
export function joinStreams(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", end).on("close", end);
  b.on("error", end).on("close", end);
}

/** Listens on `path` (mode 0600: only the handler, root, connects) and relays each connection to `target`. */
export async function relayUnixSocket(path: string, target: string): Promise<Server> {
  await rm(path, { force: true });
  const server = createServer({ pauseOnConnect: true }, (client) => {
    const upstream = connect(target);
    joinStreams(client, upstream);
    upstream.once("connect", () => client.resume());
  });
  server.listen(path);
  await once(server, "listening");
  await chmod(path, 0o600);
  return server;
}
