// QEMU's user network (libslirp) as its human monitor's `info usernet`
// lists it: one row per socket, with its TCP state. A connection QEMU
// accepted on a forwarded host port is listed with that host port as its
// source and the guest's address and port as its destination; it is
// SYN_SENT until the guest answers, ESTABLISHED once the guest accepted it,
// and gone once the guest refused it.

export interface UserNetworkSocket {
  protocol: "TCP" | "UDP";
  /** TCP's state (SYN_SENT, ESTABLISHED, …), or HOST_FORWARD for a forwarding rule's listening socket. */
  state: string;
  /** The source address: the forwarding rule's host address for a connection QEMU accepted (* for any). */
  sourceAddress: string;
  sourcePort: number;
  destinationPort: number;
}

const ROW = /^\s*(TCP|UDP)\[([A-Z_0-9]+)\]\s+-?\d+\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)\s+\d+\s+\d+\s*$/;

/** The sockets of `info usernet`'s answer; the header and the hub's name are not rows and are skipped. */
export function parseUserNetwork(text: string): UserNetworkSocket[] {
  return text.split(/\r?\n/).flatMap((line) => {
    const match = ROW.exec(line);
    if (!match) return [];
    return [
      {
        protocol: match[1] as "TCP" | "UDP",
        state: match[2] ?? "",
        sourceAddress: match[3] ?? "",
        sourcePort: Number(match[4]),
        destinationPort: Number(match[6]),
      },
    ];
  });
}

/**
 * How many connections QEMU accepted on a loopback forward the guest has accepted (ESTABLISHED).
 */
export function establishedFrom(sockets: readonly UserNetworkSocket[], hostPort: number): number {
  return sockets.filter((s) => s.protocol === "TCP" && s.sourcePort === hostPort && s.state === "ESTABLISHED").length;
}
