import { once } from "node:events";
import { rm } from "node:fs/promises";
import { type Server, type Socket, connect, createServer } from "node:net";
import { join } from "node:path";
import {
  type ConnectionOptions,
  type PeerCertificate,
  type TLSSocket,
  type Server as TlsServer,
  connect as tlsConnect,
  createServer as createTlsServer,
} from "node:tls";
import { z } from "zod";
import { MIGRATION_SOCKETS, type MigrationSocket } from "./migration.ts";

// The migration proxy: how a live migration crosses from the source node to
// the target node. The source handler listens on the MIGRATION_SOCKETS in
// the source launcher's sockets volume; each connection libvirt or QEMU
// opens there becomes one mutual-TLS connection to the target handler's
// migration port, which joins it to the socket of the same name in the
// target launcher's sockets volume. Both handlers present their
// certificate and check the other's name.
//
// The wire, per connection, once TLS is up:
//   source → target: one line, JSON, at most MAX_HEADER_BYTES:
//     {"version":1,"migration":"<migration uid>","socket":"libvirt"|"memory"|"disks"}
//   target → source: one line, {"ok":true} or {"error":"<why>"}; after ok,
//   the bytes of the socket both ways until either side closes.
// The target joins only migrations its handler registered (allow), and only
// to the target pod's own sockets: a header names a socket, never a path.

export const MIGRATION_PROXY_VERSION = 1;
/** The longest header or answer line. */
export const MAX_HEADER_BYTES = 1024;
/** How long a peer may take to send its header or answer. */
export const HEADER_TIMEOUT_MS = 10_000;

const SOCKET_KINDS = Object.keys(MIGRATION_SOCKETS) as [MigrationSocket, ...MigrationSocket[]];

export const migrationProxyHeader = z.strictObject({
  version: z.literal(MIGRATION_PROXY_VERSION),
  migration: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/, "must be a migration's uid"),
  socket: z.enum(SOCKET_KINDS),
});
export type MigrationProxyHeader = z.infer<typeof migrationProxyHeader>;

const answerSchema = z.union([
  z.strictObject({ ok: z.literal(true) }),
  z.strictObject({ error: z.string().max(MAX_HEADER_BYTES) }),
]);

export interface ProxyTls {
  ca: Buffer | string;
  cert: Buffer | string;
  key: Buffer | string;
}

/** A socket of the target pod, opened for connecting: a path that reaches exactly it, closed once connected. */
export interface TargetSocket {
  path: string;
  close: () => Promise<void>;
}

export type ProxyLog = (level: "info" | "warn", message: string, fields: Record<string, unknown>) => void;

/**
 * Joins two byte streams both ways, with backpressure. One side's end ends the other's writing only (a half-close
 * passes through, both sockets made with allowHalfOpen); a failure of either destroys both.
 */
export function joinStreams(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const fail = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", fail).on("close", (hadError) => hadError && b.destroy());
  b.on("error", fail).on("close", (hadError) => hadError && a.destroy());
}

/** Reads one line of at most MAX_HEADER_BYTES; puts back what came after it. */
function readLine(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => {
      done(new Error(`no line within ${String(HEADER_TIMEOUT_MS)} ms`));
    }, HEADER_TIMEOUT_MS);
    const done = (error: Error | undefined, line?: string, rest?: Buffer) => {
      clearTimeout(timer);
      socket.off("data", onData).off("end", onEnd).off("error", onError);
      socket.pause();
      if (error) {
        reject(error);
        return;
      }
      if (rest && rest.length > 0) socket.unshift(rest);
      resolve(line ?? "");
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline >= 0 && newline <= MAX_HEADER_BYTES)
        done(undefined, buffered.subarray(0, newline).toString("utf8"), buffered.subarray(newline + 1));
      else if (newline > MAX_HEADER_BYTES || buffered.length > MAX_HEADER_BYTES)
        done(new Error(`a line over ${String(MAX_HEADER_BYTES)} bytes`));
    };
    const onEnd = () => {
      done(new Error("the connection ended before its line"));
    };
    const onError = (error: Error) => {
      done(error);
    };
    socket.on("data", onData).once("end", onEnd).once("error", onError);
    socket.resume();
  });
}

function peerName(socket: TLSSocket): string | undefined {
  // An empty object when the peer sent no certificate.
  const cert: Partial<PeerCertificate> = socket.getPeerCertificate();
  const cn = cert.subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn;
}

export interface MigrationTargetProxyOptions {
  /** The address to listen on: the node's; all addresses when unset. */
  host?: string;
  /** The migration port; 0 for any free one (tests). */
  port: number;
  tls: ProxyTls;
  /** The certificate names (CN) of the peers allowed: the handlers'. */
  allowedPeers: readonly string[];
  log?: ProxyLog;
}

/**
 * The target handler's side: a mutual-TLS port joining each allowed connection to a socket of a registered migration's
 * target pod.
 */
export class MigrationTargetProxy {
  private readonly targets = new Map<string, (socket: MigrationSocket) => Promise<TargetSocket>>();
  private readonly server: TlsServer;
  private readonly connections = new Set<Socket>();
  private readonly o: MigrationTargetProxyOptions;
  private readonly log: ProxyLog;
  /** The port it listens on, once started. */
  port = 0;

  private constructor(options: MigrationTargetProxyOptions) {
    this.o = options;
    this.log = options.log ?? (() => undefined);
    this.server = createTlsServer(
      { ...options.tls, allowHalfOpen: true, requestCert: true, rejectUnauthorized: true, minVersion: "TLSv1.3" },
      (socket) => {
        this.accept(socket);
      },
    );
    // Every connection, from its first byte (a handshake under way too), to end at close.
    this.server.on("connection", (socket: Socket) => {
      this.connections.add(socket);
      socket.once("close", () => this.connections.delete(socket));
    });
    this.server.on("tlsClientError", (error) => {
      this.log("warn", "refused a migration connection at its TLS handshake", { error: error.message });
    });
  }

  static async start(options: MigrationTargetProxyOptions): Promise<MigrationTargetProxy> {
    const proxy = new MigrationTargetProxy(options);
    proxy.server.listen(options.port, options.host);
    await once(proxy.server, "listening");
    const address = proxy.server.address();
    if (typeof address !== "object" || !address) throw new Error("the migration proxy has no port");
    proxy.port = address.port;
    return proxy;
  }

  /** Lets the migration's connections through to its target pod's sockets, as `open` finds them. */
  allow(migration: string, open: (socket: MigrationSocket) => Promise<TargetSocket>): void {
    this.targets.set(migration, open);
  }

  /** No new connection of the migration gets through; those open stay. */
  revoke(migration: string): void {
    this.targets.delete(migration);
  }

  allowed(): string[] {
    return [...this.targets.keys()];
  }

  private accept(socket: TLSSocket): void {
    const log = this.log;
    this.connections.add(socket);
    socket.once("close", () => this.connections.delete(socket));
    socket.on("error", () => socket.destroy());
    const refuse = (why: string, fields: Record<string, unknown> = {}) => {
      log("warn", "refused a migration connection", { why, ...fields });
      socket.end(`${JSON.stringify({ error: why })}\n`);
    };
    const peer = peerName(socket);
    if (peer === undefined || !this.o.allowedPeers.includes(peer)) {
      refuse(`the certificate's name ${JSON.stringify(peer ?? "")} is not a handler's`);
      return;
    }
    void (async () => {
      let header: MigrationProxyHeader;
      try {
        const parsed = migrationProxyHeader.safeParse(JSON.parse(await readLine(socket)));
        if (!parsed.success) {
          refuse(`not a migration header: ${parsed.error.issues[0]?.message ?? "invalid"}`);
          return;
        }
        header = parsed.data;
      } catch (error) {
        refuse(`not a migration header: ${error instanceof Error ? error.message : String(error)}`);
        return;
      }
      const open = this.targets.get(header.migration);
      if (!open) {
        refuse(`no migration ${header.migration} comes to this node`);
        return;
      }
      let target: TargetSocket;
      try {
        target = await open(header.socket);
      } catch (error) {
        refuse(
          `the target's ${header.socket} socket cannot be ` +
            `reached: ${error instanceof Error ? error.message : String(error)}`,
          { migration: header.migration },
        );
        return;
      }
      const upstream = connect({ path: target.path, allowHalfOpen: true });
      let joined = false;
      upstream.once("connect", () => {
        joined = true;
        void target.close();
        socket.write(`${JSON.stringify({ ok: true })}\n`);
        joinStreams(socket, upstream);
        socket.resume();
        log("info", "joined a migration connection", { migration: header.migration, socket: header.socket });
      });
      upstream.once("error", (error) => {
        void target.close();
        if (!joined)
          refuse(`the target's ${header.socket} socket refused: ${error.message}`, { migration: header.migration });
      });
    })();
  }

  async close(): Promise<void> {
    this.targets.clear();
    const closed = new Promise((resolve) => this.server.close(resolve));
    for (const socket of this.connections) socket.destroy();
    await closed;
  }
}

export interface MigrationSourceProxyOptions {
  /** The folder the sockets are made in: the source launcher's sockets volume (through a checked handle). */
  dir: string;
  migration: string;
  /** The target handler's migration port. */
  target: { host: string; port: number };
  tls: ProxyTls;
  /** The name the target handler's certificate must carry. */
  serverName: string;
  /** The sockets to make; all of MIGRATION_SOCKETS by default. */
  sockets?: readonly MigrationSocket[];
  log?: ProxyLog;
}

export interface MigrationSourceProxy {
  close: () => Promise<void>;
}

/**
 * Dials the target handler for one connection and has it joined to the socket; the TLS socket once the target said ok.
 */
export async function dialMigrationTarget(
  o: Pick<MigrationSourceProxyOptions, "migration" | "target" | "tls" | "serverName">,
  socket: MigrationSocket,
): Promise<TLSSocket> {
  // tls.connect takes allowHalfOpen as net.Socket does, which its types leave out.
  const options: ConnectionOptions & { allowHalfOpen: boolean } = {
    host: o.target.host,
    port: o.target.port,
    ...o.tls,
    servername: o.serverName,
    minVersion: "TLSv1.3",
    allowHalfOpen: true,
  };
  const tls = tlsConnect(options);
  try {
    await new Promise<void>((resolve, reject) => {
      tls.once("secureConnect", resolve).once("error", reject);
    });
    const header: MigrationProxyHeader = { version: MIGRATION_PROXY_VERSION, migration: o.migration, socket };
    tls.write(`${JSON.stringify(header)}\n`);
    // In TLS 1.3 the server checks the client's certificate after the client's handshake is done: a refused one shows
    // here.
    const line = await readLine(tls).catch((error: unknown) => {
      throw new Error(
        "the target handler did not answer (a refused " +
          `certificate?): ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    });
    const answer = answerSchema.parse(JSON.parse(line));
    if ("error" in answer) throw new Error(`the target handler refused: ${answer.error}`);
    return tls;
  } catch (error) {
    tls.destroy();
    throw error;
  }
}

/**
 * The source handler's side: listens on the migration's sockets in `dir` (made writable for all: the launcher's user
 * connects, in a folder only its pod sees) and carries each connection to the target handler.
 */
export async function startMigrationSourceProxy(o: MigrationSourceProxyOptions): Promise<MigrationSourceProxy> {
  const log: ProxyLog = o.log ?? (() => undefined);
  const servers: Server[] = [];
  const connections = new Set<Socket>();
  const close = async () => {
    for (const socket of connections) socket.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  };
  try {
    for (const kind of o.sockets ?? SOCKET_KINDS) {
      const path = join(o.dir, MIGRATION_SOCKETS[kind]);
      const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (local) => {
        connections.add(local);
        local.once("close", () => connections.delete(local));
        local.on("error", () => local.destroy());
        dialMigrationTarget(o, kind).then(
          (remote) => {
            connections.add(remote);
            remote.once("close", () => connections.delete(remote));
            joinStreams(local, remote);
            local.resume();
            remote.resume();
          },
          (error: unknown) => {
            log("warn", "could not carry a migration connection to the target", {
              migration: o.migration,
              socket: kind,
              error: error instanceof Error ? error.message : String(error),
            });
            local.destroy();
          },
        );
      });
      await rm(path, { force: true });
      // The socket is made writable by all as it is bound (no chmod by path afterwards, which a link swapped in could
      // lead astray).
      const umask = process.umask(0);
      try {
        server.listen(path);
      } finally {
        process.umask(umask);
      }
      await once(server, "listening");
      servers.push(server);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { close };
}
