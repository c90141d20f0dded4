import { type Socket, createSocket } from "node:dgram";
import { once } from "node:events";
import type { Logger } from "@kubevirt-ts/runtime";
import { DHCP_SERVER_PORT } from "@kubevirt-ts/node-contract";
import { type DhcpLease, answer, parseRequest } from "./dhcp.ts";

// The launcher's DHCP server on the pod network's bridge (dhcp.ts is what it
// says). It listens on every address of the pod on port 67: network-setup's
// rules let DHCP in from the bridge alone, so the one client is the guest.
// A client without an address yet is answered at `answerTo`: the masquerade
// bridge's broadcast address (a broadcast needs no neighbour entry, which
// the launcher, without NET_ADMIN, could not add), or, under the bridge
// binding, the guest's address, which network-setup gave a route and the
// guest's MAC on the bridge. A client with an address is answered there.

const CLIENT_PORT = 68;
/** Answers a second, at most: a guest that floods its DHCP costs the launcher no more than this. */
const ANSWERS_PER_SECOND = 20;

export interface DhcpServer {
  close(): Promise<void>;
}

export async function startDhcpServer(
  lease: DhcpLease,
  log: Logger,
  answerTo: string = lease.broadcast,
): Promise<DhcpServer> {
  const socket: Socket = createSocket({ type: "udp4", reuseAddr: true });
  let window = { start: 0, answers: 0 };
  socket.on("message", (message) => {
    const request = parseRequest(message);
    if (!request) return;
    const now = Date.now();
    if (now - window.start >= 1000) window = { start: now, answers: 0 };
    if (window.answers >= ANSWERS_PER_SECOND) return;
    const reply = answer(request, lease);
    if (!reply) return;
    window.answers++;
    const to = request.ciaddr !== "0.0.0.0" ? request.ciaddr : answerTo;
    socket.send(reply.message, CLIENT_PORT, to, (error) => {
      if (error) log.warn("could not answer the guest's DHCP", { error, to });
    });
    log.debug("answered the guest's DHCP", { request: request.type, answer: reply.type, to });
  });
  socket.bind({ port: DHCP_SERVER_PORT, address: "0.0.0.0" });
  try {
    await once(socket, "listening");
  } catch (error) {
    socket.close();
    throw new Error(
      `could not listen for the guest's DHCP on port ${String(DHCP_SERVER_PORT)} ` +
        `(the launcher pod sets net.ipv4.ip_unprivileged_port_start=0): ${(error as Error).message}`,
      { cause: error },
    );
  }
  socket.on("error", (error) => {
    log.warn("the DHCP server's socket failed", { error });
  });
  socket.setBroadcast(true);
  log.info("answering the guest's DHCP on the pod network's bridge", {
    guest: lease.guest,
    gateway: lease.router,
    dnsServers: lease.dnsServers,
    searchDomains: lease.searchDomains,
  });
  return {
    close: () =>
      new Promise((resolve) => {
        socket.close(() => {
          resolve();
        });
      }),
  };
}
