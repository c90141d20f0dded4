import { describe, expect, it } from "vitest";
import { establishedFrom, parseUserNetwork } from "./user-network.ts";

// `info usernet` as QEMU 7.2 answered it, with a connection the guest has not answered yet and one it accepted.
const ANSWER = [
  "Hub -1 (hostua-default):",
  "  Protocol[State]    FD  Source Address  Port   Dest. Address  Port RecvQ SendQ",
  "  TCP[SYN_SENT]       8       127.0.0.1 40001  198.19.254.15    22     0     0",
  "  TCP[ESTABLISHED]   12       127.0.0.1 40002  198.19.254.15    80     0     0",
  "  TCP[ESTABLISHED]   14  198.19.254.15 40003      198.18.0.10   443     0     0",
  "  TCP[HOST_FORWARD]   3       127.0.0.1 40001  198.19.254.15    22     0     0",
  "  TCP[HOST_FORWARD]   4               * 40002  198.19.254.15    80     0     0",
  "  UDP[236 sec]       15               * 5353  198.19.254.15  5353     0     0",
  "",
].join("\r\n");

describe("parseUserNetwork", () => {
  it("reads each TCP socket's state and ports, skipping what is not a TCP or UDP row", () => {
    expect(parseUserNetwork(ANSWER).filter((s) => s.protocol === "TCP")).toEqual([
      { protocol: "TCP", state: "SYN_SENT", sourceAddress: "127.0.0.1", sourcePort: 40001, destinationPort: 22 },
      { protocol: "TCP", state: "ESTABLISHED", sourceAddress: "127.0.0.1", sourcePort: 40002, destinationPort: 80 },
      {
        protocol: "TCP",
        state: "ESTABLISHED",
        sourceAddress: "198.19.254.15",
        sourcePort: 40003,
        destinationPort: 443,
      },
      { protocol: "TCP", state: "HOST_FORWARD", sourceAddress: "127.0.0.1", sourcePort: 40001, destinationPort: 22 },
      { protocol: "TCP", state: "HOST_FORWARD", sourceAddress: "*", sourcePort: 40002, destinationPort: 80 },
    ]);
  });

  it("counts only the connections the guest accepted on that host port", () => {
    const sockets = parseUserNetwork(ANSWER);
    expect(establishedFrom(sockets, 40001)).toBe(0);
    expect(establishedFrom(sockets, 40002)).toBe(1);
    expect(establishedFrom(sockets, 40004)).toBe(0);
  });
});
