import { once } from "node:events";
import { chmod, rm } from "node:fs/promises";
import { type Server, connect, createServer } from "node:net";
import { join } from "node:path";
import type { PortForward } from "@kubevirt-ts/kubevirt-api";
import { portForwardSocket } from "@kubevirt-ts/node-contract";
import { joinStreams } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";

// Port forwarding into the guest (KubeVirt's portforward subresource, what
// `virtctl port-forward` and `virtctl ssh` use). The handler reaches the
// launcher only through its sockets volume: for each port asked for, the
// launcher listens on a socket there (portForwardSocket) and joins each
// connection to it with one to the guest's port, at the guest's address on
// the pod network's bridge (node-contract's pod-network.ts).

export interface PortForwarderOptions {
  socketsDir: string;
  /** The guest's address on the bridge; fails when the VMI has no interface on the pod network. */
  guestAddress: () => string;
  log: Logger;
}

export class PortForwarder {
  private readonly o: PortForwarderOptions;
  /** Each port's tunnel, by its socket's name, once asked for; a failed one is forgotten, to be tried again. */
  private readonly tunnels = new Map<string, Promise<Server>>();

  constructor(options: PortForwarderOptions) {
    this.o = options;
  }

  /** Makes the tunnel to the guest's port, if there is none yet; resolves once its socket listens. */
  async open(forward: PortForward): Promise<void> {
    const name = portForwardSocket(forward);
    let tunnel = this.tunnels.get(name);
    if (!tunnel) {
      tunnel = this.start(forward, name);
      this.tunnels.set(name, tunnel);
      tunnel.catch(() => this.tunnels.delete(name));
    }
    await tunnel;
  }

  private async start(forward: PortForward, name: string): Promise<Server> {
    // Refused at once (no domain, no pod-network interface), before anything listens.
    this.o.guestAddress();
    const path = join(this.o.socketsDir, name);
    await rm(path, { force: true });
    const server = createServer({ pauseOnConnect: true }, (client) => {
      const guest = connect({ host: this.o.guestAddress(), port: forward.port });
      joinStreams(client, guest);
      guest.once("connect", () => client.resume());
      this.o.log.debug("port forward connection", { port: forward.port });
    });
    server.listen(path);
    await once(server, "listening");
    // The handler (root) connects; nobody else in the pod needs to.
    await chmod(path, 0o600);
    this.o.log.info("forwarding a port of the guest", { port: forward.port, protocol: forward.protocol, socket: name });
    return server;
  }

  /** Stops listening; open connections end with the guest. */
  async close(): Promise<void> {
    for (const tunnel of this.tunnels.values()) {
      const server = await tunnel.catch(() => undefined);
      server?.close();
    }
    this.tunnels.clear();
  }
}
