import { describe, expect, it } from "vitest";
import { type DhcpLease, MessageType, answer, parseRequest, parseResolvConf } from "./dhcp.ts";

const lease: DhcpLease = {
  server: "198.19.254.1",
  guest: "198.19.254.2",
  prefix: 24,
  broadcast: "198.19.254.255",
  router: "198.19.254.1",
  dnsServers: ["198.18.96.10"],
  searchDomains: ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local"],
  hostname: "vm-a",
  mtu: 1450,
};

const MAC = Buffer.from([0x02, 0, 0, 0, 0, 0x2a]);

/** A client's message as dhclient sends it: BOOTREQUEST, Ethernet, the cookie, then its options. */
function clientMessage(type: number, options: number[] = [], ciaddr = [0, 0, 0, 0]): Buffer {
  const header = Buffer.alloc(240);
  header[0] = 1;
  header[1] = 1;
  header[2] = 6;
  header.writeUInt32BE(0x1234abcd, 4);
  header.writeUInt16BE(0x8000, 10);
  Buffer.from(ciaddr).copy(header, 12);
  MAC.copy(header, 28);
  header.writeUInt32BE(0x63825363, 236);
  return Buffer.concat([header, Buffer.from([53, 1, type, ...options, 255])]);
}

/** A reply's options by code, parsed back the way a client reads them (long ones concatenated). */
function optionsOf(message: Buffer): Map<number, Buffer> {
  const options = new Map<number, Buffer>();
  for (let at = 240; at < message.length && message[at] !== 255;) {
    const code = message[at] ?? 0;
    if (code === 0) {
      at++;
      continue;
    }
    const length = message[at + 1] ?? 0;
    options.set(code, Buffer.concat([options.get(code) ?? Buffer.alloc(0), message.subarray(at + 2, at + 2 + length)]));
    at += 2 + length;
  }
  return options;
}

describe("the launcher's DHCP", () => {
  it("offers the guest its address, the gateway, the pod's DNS and search path, its host name and MTU", () => {
    const request = parseRequest(clientMessage(MessageType.discover));
    expect(request).toMatchObject({ type: MessageType.discover, xid: 0x1234abcd, flags: 0x8000 });
    const reply = request && answer(request, lease);
    expect(reply?.type).toBe(MessageType.offer);
    const message = reply?.message ?? Buffer.alloc(0);
    expect(message[0]).toBe(2);
    expect(message.readUInt32BE(4)).toBe(0x1234abcd);
    expect([...message.subarray(16, 20)]).toEqual([198, 19, 254, 2]);
    expect(message.subarray(28, 34)).toEqual(MAC);
    expect(message.length).toBeGreaterThanOrEqual(300);
    const options = optionsOf(message);
    expect([...(options.get(53) ?? [])]).toEqual([2]);
    expect([...(options.get(54) ?? [])]).toEqual([198, 19, 254, 1]);
    expect([...(options.get(1) ?? [])]).toEqual([255, 255, 255, 0]);
    expect([...(options.get(3) ?? [])]).toEqual([198, 19, 254, 1]);
    expect([...(options.get(6) ?? [])]).toEqual([198, 18, 96, 10]);
    expect([...(options.get(51) ?? [])]).toEqual([255, 255, 255, 255]);
    expect([...(options.get(26) ?? [])]).toEqual([0x05, 0xaa]);
    expect(options.get(12)?.toString()).toBe("vm-a");
    expect(options.get(15)?.toString()).toBe("ns.svc.cluster.local");
    // RFC 3397: each name as DNS labels, one after the other.
    expect(options.get(119)).toEqual(
      Buffer.concat([
        Buffer.from("\x02ns\x03svc\x07cluster\x05local\x00", "latin1"),
        Buffer.from("\x03svc\x07cluster\x05local\x00", "latin1"),
        Buffer.from("\x07cluster\x05local\x00", "latin1"),
      ]),
    );
  });

  it("gives a pod address of /32 its gateway as classless routes, and no router without a gateway", () => {
    const bridged: DhcpLease = {
      ...lease,
      server: "169.254.75.10",
      guest: "198.18.7.9",
      prefix: 32,
      broadcast: "198.18.7.9",
      router: "169.254.1.1",
      routes: [
        { destination: { address: "169.254.1.1", prefix: 32 }, router: "0.0.0.0" },
        { destination: { address: "0.0.0.0", prefix: 0 }, router: "169.254.1.1" },
      ],
    };
    const request = parseRequest(clientMessage(MessageType.discover));
    const options = optionsOf((request && answer(request, bridged))?.message ?? Buffer.alloc(0));
    expect([...(options.get(1) ?? [])]).toEqual([255, 255, 255, 255]);
    expect([...(options.get(54) ?? [])]).toEqual([169, 254, 75, 10]);
    // RFC 3442: the prefix length, the destination's significant octets, the router.
    expect([...(options.get(121) ?? [])]).toEqual([32, 169, 254, 1, 1, 0, 0, 0, 0, 0, 169, 254, 1, 1]);
    const lonely = optionsOf((request && answer(request, { ...lease, router: undefined }))?.message ?? Buffer.alloc(0));
    expect(lonely.has(3)).toBe(false);
    expect(lonely.has(121)).toBe(false);
  });

  it("acks a request for the guest's address, naks one for another, and stays out of another server's", () => {
    const asking = (address: number[], server?: number[]) =>
      parseRequest(clientMessage(MessageType.request, [50, 4, ...address, ...(server ? [54, 4, ...server] : [])]));
    const mine = asking([198, 19, 254, 2], [198, 19, 254, 1]);
    expect(mine && answer(mine, lease)?.type).toBe(MessageType.ack);
    const other = asking([198, 19, 254, 99]);
    const nak = other && answer(other, lease);
    expect(nak?.type).toBe(MessageType.nak);
    expect([...(nak?.message.subarray(16, 20) ?? [])]).toEqual([0, 0, 0, 0]);
    const elsewhere = asking([198, 19, 254, 2], [198, 19, 254, 7]);
    expect(elsewhere && answer(elsewhere, lease)).toBeUndefined();
    // A renewal names no address but its own.
    const renewal = parseRequest(clientMessage(MessageType.request, [], [198, 19, 254, 2]));
    expect(renewal && answer(renewal, lease)?.type).toBe(MessageType.ack);
  });

  it("ignores what is not a client's well-formed request", () => {
    expect(parseRequest(Buffer.alloc(100))).toBeUndefined();
    const reply = clientMessage(MessageType.discover);
    reply[0] = 2;
    expect(parseRequest(reply)).toBeUndefined();
    const truncated = clientMessage(MessageType.discover, [12, 200, 1, 2]);
    expect(parseRequest(truncated)).toBeUndefined();
    const release = parseRequest(clientMessage(MessageType.release));
    expect(release && answer(release, lease)).toBeUndefined();
  });

  it("splits a search list longer than an option into several (RFC 3396) and leaves out names that are not", () => {
    const many = Array.from({ length: 12 }, (_, i) => `namespace-${String(i)}.svc.cluster.local`);
    const request = parseRequest(clientMessage(MessageType.discover));
    const reply = request && answer(request, { ...lease, searchDomains: ["bad name", ...many] });
    const search = optionsOf(reply?.message ?? Buffer.alloc(0)).get(119);
    expect(search?.length).toBeGreaterThan(255);
    expect(search?.toString("latin1")).toContain("\x0cnamespace-11\x03svc");
    expect(search?.toString("latin1")).not.toContain("bad");
  });

  it("reads the pod's resolv.conf as the resolver does", () => {
    expect(
      parseResolvConf(
        "search a.svc.cluster.local svc.cluster.local\nnameserver 198.18.96.10\nnameserver fd00::a\noptions ndots:5\n",
      ),
    ).toEqual({ nameservers: ["198.18.96.10"], search: ["a.svc.cluster.local", "svc.cluster.local"] });
  });
});
