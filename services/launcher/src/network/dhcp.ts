// DHCP (RFC 2131, options of RFC 2132, the domain search list of RFC 3397,
// classless static routes of RFC 3442) as the launcher answers it on the pod
// network's bridge, as KubeVirt's launcher does: the guest gets its one
// address (the masquerade's guest address, or the pod's own under the bridge
// binding), its gateway, the pod's DNS servers and search path, its host name
// and the pod interface's MTU, for ever (an infinite lease). A pure codec:
// dhcp-server.ts puts it on the wire.

/** A route the guest is given: to a network, through a router (0.0.0.0: on the link). */
export interface DhcpRoute {
  destination: { address: string; prefix: number };
  router: string;
}

/** What the guest is told. */
export interface DhcpLease {
  /** The server's own address on the bridge: the server identifier. */
  server: string;
  guest: string;
  prefix: number;
  broadcast: string;
  /** The guest's default gateway; none when undefined. */
  router: string | undefined;
  /**
   * Classless static routes, for a gateway off the guest's network (a pod address of /32): a client that takes them
   * takes no router from option 3, so they hold the default route too.
   */
  routes?: readonly DhcpRoute[];
  dnsServers: readonly string[];
  searchDomains: readonly string[];
  hostname?: string;
  mtu?: number;
}

export const MessageType = {
  discover: 1,
  offer: 2,
  request: 3,
  decline: 4,
  ack: 5,
  nak: 6,
  release: 7,
  inform: 8,
} as const;

const Option = {
  pad: 0,
  subnetMask: 1,
  router: 3,
  dnsServers: 6,
  hostname: 12,
  domainName: 15,
  mtu: 26,
  broadcast: 28,
  requestedAddress: 50,
  leaseTime: 51,
  messageType: 53,
  serverId: 54,
  domainSearch: 119,
  classlessRoutes: 121,
  end: 255,
} as const;

const MAGIC_COOKIE = 0x63825363;
/** The fixed part of a message before its options (RFC 2131's op to file, and the magic cookie). */
const HEADER_BYTES = 240;
/** BOOTP's least message size, which some clients still insist on. */
const MIN_MESSAGE_BYTES = 300;
const BOOTREQUEST = 1;
const BOOTREPLY = 2;
/** The hardware type and address length of Ethernet. */
const ETHERNET = { htype: 1, hlen: 6 };
const INFINITE_LEASE = 0xffffffff;

export interface DhcpRequest {
  type: number;
  xid: number;
  flags: number;
  ciaddr: string;
  giaddr: string;
  chaddr: Buffer;
  /** Option 50, when the client asks for an address. */
  requestedAddress?: string;
  /** Option 54, when the client names the server it answers. */
  serverId?: string;
}

const readAddress = (buf: Buffer, offset: number) => [...buf.subarray(offset, offset + 4)].join(".");

function addressBytes(address: string): number[] {
  const octets = address.split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255))
    throw new Error(`not an IPv4 address: ${address}`);
  return octets;
}

/** A client's request, or undefined for anything else (a reply, another hardware, a malformed message). */
export function parseRequest(buf: Buffer): DhcpRequest | undefined {
  if (buf.length < HEADER_BYTES) return undefined;
  if (buf[0] !== BOOTREQUEST || buf[1] !== ETHERNET.htype || buf[2] !== ETHERNET.hlen) return undefined;
  if (buf.readUInt32BE(236) !== MAGIC_COOKIE) return undefined;
  const options = new Map<number, Buffer>();
  for (let at = HEADER_BYTES; at < buf.length;) {
    const code = buf[at] ?? Option.end;
    if (code === Option.end) break;
    if (code === Option.pad) {
      at++;
      continue;
    }
    const length = buf[at + 1];
    if (length === undefined || at + 2 + length > buf.length) return undefined;
    // Options that come twice are one, concatenated (RFC 3396).
    const value = buf.subarray(at + 2, at + 2 + length);
    options.set(code, Buffer.concat([options.get(code) ?? Buffer.alloc(0), value]));
    at += 2 + length;
  }
  const type = options.get(Option.messageType);
  if (type?.length !== 1) return undefined;
  const address = (code: number) => {
    const value = options.get(code);
    return value?.length === 4 ? readAddress(value, 0) : undefined;
  };
  const requestedAddress = address(Option.requestedAddress);
  const serverId = address(Option.serverId);
  return {
    type: type[0] ?? 0,
    xid: buf.readUInt32BE(4),
    flags: buf.readUInt16BE(10),
    ciaddr: readAddress(buf, 12),
    giaddr: readAddress(buf, 24),
    chaddr: Buffer.from(buf.subarray(28, 28 + ETHERNET.hlen)),
    ...(requestedAddress !== undefined ? { requestedAddress } : {}),
    ...(serverId !== undefined ? { serverId } : {}),
  };
}

/** A domain name in DNS's wire format (RFC 1035 labels, no compression); undefined when it is not a valid name. */
function domainWire(name: string): number[] | undefined {
  const labels = name.replace(/\.$/, "").split(".");
  if (labels.some((l) => l.length === 0 || l.length > 63 || !/^[A-Za-z0-9_-]+$/.test(l))) return undefined;
  return [...labels.flatMap((l) => [l.length, ...Buffer.from(l, "ascii")]), 0];
}

/** An option as bytes; one longer than 255 bytes goes as several of the same code (RFC 3396). */
function option(code: number, value: readonly number[]): number[] {
  if (value.length === 0) return [code, 0];
  const out: number[] = [];
  for (let at = 0; at < value.length; at += 255) {
    const part = value.slice(at, at + 255);
    out.push(code, part.length, ...part);
  }
  return out;
}

const uint32 = (value: number) => [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256);

function subnetMask(prefix: number): number[] {
  return uint32(prefix === 0 ? 0 : 2 ** 32 - 2 ** (32 - prefix));
}

/** A route as RFC 3442 encodes it: the prefix length, the destination's significant octets, the router. */
function classlessRoute(route: DhcpRoute): number[] {
  const octets = Math.ceil(route.destination.prefix / 8);
  return [
    route.destination.prefix,
    ...addressBytes(route.destination.address).slice(0, octets),
    ...addressBytes(route.router),
  ];
}

/** The lease's options, in the order clients expect them (message type first). */
function leaseOptions(type: number, lease: DhcpLease): number[] {
  const search = lease.searchDomains.map(domainWire).filter((w): w is number[] => w !== undefined);
  const [domain] = lease.searchDomains.filter((d) => domainWire(d) !== undefined);
  const hostname = lease.hostname !== undefined && domainWire(lease.hostname) ? lease.hostname : undefined;
  return [
    ...option(Option.messageType, [type]),
    ...option(Option.serverId, addressBytes(lease.server)),
    ...(type === MessageType.nak
      ? []
      : [
          ...option(Option.leaseTime, uint32(INFINITE_LEASE)),
          ...option(Option.subnetMask, subnetMask(lease.prefix)),
          ...(lease.router !== undefined ? option(Option.router, addressBytes(lease.router)) : []),
          ...(lease.routes !== undefined && lease.routes.length > 0
            ? option(Option.classlessRoutes, lease.routes.flatMap(classlessRoute))
            : []),
          ...option(Option.broadcast, addressBytes(lease.broadcast)),
          ...(lease.dnsServers.length > 0 ? option(Option.dnsServers, lease.dnsServers.flatMap(addressBytes)) : []),
          ...(domain !== undefined ? option(Option.domainName, [...Buffer.from(domain.replace(/\.$/, ""))]) : []),
          ...(search.length > 0 ? option(Option.domainSearch, search.flat()) : []),
          ...(hostname !== undefined ? option(Option.hostname, [...Buffer.from(hostname)]) : []),
          ...(lease.mtu !== undefined ? option(Option.mtu, [Math.floor(lease.mtu / 256), lease.mtu % 256]) : []),
        ]),
    Option.end,
  ];
}

/**
 * The answer to a request, or undefined when none is due: an offer to a discover, an ack to a request for the guest's
 * address (a nak to one for another), an ack without a lease to an inform; nothing to a release, a decline, or a
 * request that answers another server.
 */
export function answer(request: DhcpRequest, lease: DhcpLease): { type: number; message: Buffer } | undefined {
  let type: number;
  switch (request.type) {
    case MessageType.discover:
      type = MessageType.offer;
      break;
    case MessageType.request: {
      if (request.serverId !== undefined && request.serverId !== lease.server) return undefined;
      const asked = request.requestedAddress ?? (request.ciaddr !== "0.0.0.0" ? request.ciaddr : undefined);
      type = asked === undefined || asked === lease.guest ? MessageType.ack : MessageType.nak;
      break;
    }
    case MessageType.inform:
      type = MessageType.ack;
      break;
    default:
      return undefined;
  }
  const header = Buffer.alloc(HEADER_BYTES);
  header[0] = BOOTREPLY;
  header[1] = ETHERNET.htype;
  header[2] = ETHERNET.hlen;
  header.writeUInt32BE(request.xid, 4);
  header.writeUInt16BE(request.flags, 10);
  Buffer.from(addressBytes(request.ciaddr)).copy(header, 12);
  if (type !== MessageType.nak && request.type !== MessageType.inform)
    Buffer.from(addressBytes(lease.guest)).copy(header, 16);
  Buffer.from(addressBytes(request.giaddr)).copy(header, 24);
  request.chaddr.copy(header, 28);
  header.writeUInt32BE(MAGIC_COOKIE, 236);
  const message = Buffer.concat([header, Buffer.from(leaseOptions(type, lease))]);
  return {
    type,
    message:
      message.length >= MIN_MESSAGE_BYTES
        ? message
        : Buffer.concat([message, Buffer.alloc(MIN_MESSAGE_BYTES - message.length)]),
  };
}

/** The nameservers (IPv4), search domains and options of a resolv.conf, as the kubelet writes the pod's. */
export function parseResolvConf(text: string): { nameservers: string[]; search: string[] } {
  const nameservers: string[] = [];
  let search: string[] = [];
  for (const line of text.split("\n")) {
    const [keyword, ...values] = line.trim().split(/\s+/);
    if (keyword === "nameserver" && values[0] !== undefined && /^\d{1,3}(\.\d{1,3}){3}$/.test(values[0]))
      nameservers.push(values[0]);
    // The last search line wins, as for the resolver.
    if (keyword === "search") search = values;
  }
  // The resolver reads three nameservers at most; the kubelet writes no more than six search domains' worth.
  return { nameservers: nameservers.slice(0, 3), search: search.slice(0, 32) };
}
