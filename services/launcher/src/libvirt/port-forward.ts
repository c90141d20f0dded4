import { once } from "node:events";
import { chmod, rm } from "node:fs/promises";
import { type Server, connect, createServer } from "node:net";
import { join } from "node:path";
import type { PortForward } from "@kubevirt-ts/kubevirt-api";
import { portForwardSocket } from "@kubevirt-ts/node-contract";
import { RpcError, joinStreams } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";

// Port forwarding into the guest (KubeVirt's portforward subresource, what
// `virtctl port-forward` and `virtctl ssh` use). The guest sits behind
// QEMU's user network, which takes no connection from outside unless told
// to forward one; and the handler reaches the launcher only through its
// sockets volume. So, for each port asked for, QEMU forwards a port of the
// pod's loopback address to the guest's port, and the launcher listens on a
// socket in its sockets volume (portForwardSocket) and joins each connection
// to it with one to that loopback port.

export interface PortForwarderOptions {
  socketsDir: string;
  /** Has QEMU forward the pod's loopback hostPort to the guest's guestPort. */
  forwardToGuest: (hostPort: number, guestPort: number) => Promise<void>;
  log: Logger;
}

/** How many times a loopback port is picked again when another took it between the pick and QEMU's bind. */
const PICKS = 3;

/** A loopback port nobody listens on now. */
async function freeLoopbackPort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const address = probe.address();
  probe.close();
  if (typeof address !== "object" || !address) throw new Error("could not pick a loopback port");
  return address.port;
}

/** Has QEMU forward a free loopback port to the guest's port; that loopback port. */
export async function forwardFreeLoopbackPort(
  forwardToGuest: PortForwarderOptions["forwardToGuest"],
  guestPort: number,
  log: Logger,
): Promise<number> {
  for (let pick = 1; ; pick++) {
    const hostPort = await freeLoopbackPort();
    try {
      await forwardToGuest(hostPort, guestPort);
      return hostPort;
    } catch (error) {
      // Only QEMU's failure to bind may pass with another port; a refusal (no domain, no interface) stands.
      if (pick >= PICKS || !(error instanceof RpcError && error.code === "Failed")) throw error;
      log.debug("could not forward a loopback port; picking another", { hostPort, error });
    }
  }
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
    const hostPort = await this.forward(forward.port);
    const path = join(this.o.socketsDir, name);
    await rm(path, { force: true });
    const server = createServer({ pauseOnConnect: true }, (client) => {
      const guest = connect({ host: "127.0.0.1", port: hostPort });
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

  private forward(guestPort: number): Promise<number> {
    return forwardFreeLoopbackPort(this.o.forwardToGuest, guestPort, this.o.log);
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
