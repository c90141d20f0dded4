import { once } from "node:events";
import { chmod, rm } from "node:fs/promises";
import { type Server, connect, createServer } from "node:net";
import { joinStreams } from "@kubevirt-ts/launcher-protocol";

// A unix socket whose every connection is joined to a new one to another
// unix socket: how a migration target shows its libvirt (whose socket is
// in the launcher's own folder) in its sockets volume, where the handler's
// proxy reaches it.

/** Listens on `path` (mode 0600: only the handler, root, connects) and relays each connection to `target`. */
export async function relayUnixSocket(path: string, target: string): Promise<Server> {
  await rm(path, { force: true });
  const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => {
    const upstream = connect({ path: target, allowHalfOpen: true });
    joinStreams(client, upstream);
    upstream.once("connect", () => client.resume());
  });
  server.listen(path);
  await once(server, "listening");
  await chmod(path, 0o600);
  return server;
}
