import { once } from "node:events";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { type Server, type Socket, connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pki } from "@kubevirt-ts/control-plane";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATION_SOCKETS, type MigrationSocket } from "./migration.ts";
import {
  MigrationTargetProxy,
  type ProxyTls,
  dialMigrationTarget,
  startMigrationSourceProxy,
} from "./migration-proxy.ts";

// Both handlers' halves with real TLS (certificates from openssl) and real
// unix sockets: the target pod's sockets are servers of the test's.

const HANDLER = "kubevirt-ts-handler";
let dir: string;
const tls: Record<string, ProxyTls> = {};
let target: MigrationTargetProxy;
/** The target pod's sockets: each answers with its own name, then echoes. */
const podSockets: Server[] = [];
const refusals: string[] = [];

/** The certificate the test made of that name. */
function t(name: string): ProxyTls {
  const pair = tls[name];
  if (!pair) throw new Error(`no certificate ${name}`);
  return pair;
}

async function issue(
  pki: Pki,
  name: string,
  commonName: string,
  usage: "server" | "client" | "both",
  hosts?: string[],
): Promise<ProxyTls> {
  const pair = await pki.issue({ name, commonName, usage, ...(hosts ? { hosts } : {}) });
  return { ca: await readFile(pki.ca.cert), cert: await readFile(pair.cert), key: await readFile(pair.key) };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "migration-proxy-"));
  const pki = new Pki(dir);
  await pki.createCa("kubevirt-ts-console-ca");
  // As the chart's: one certificate for every handler, for serving and as a client.
  tls.handler = await issue(pki, "handler", HANDLER, "both", [HANDLER]);
  tls.api = await issue(pki, "api", "kubevirt-ts-api", "client");
  tls.wrongServer = await issue(pki, "wrong-server", "kubevirt-ts-web", "both", ["kubevirt-ts-web"]);
  const other = new Pki(join(dir));
  Object.assign(other, { ca: { cert: join(dir, "other-ca.crt"), key: join(dir, "other-ca.key") } });
  await other.createCa("someone-else");
  const stranger = await other.issue({ name: "stranger", commonName: HANDLER, usage: "both", hosts: [HANDLER] });
  tls.stranger = {
    ca: await readFile(pki.ca.cert),
    cert: await readFile(stranger.cert),
    key: await readFile(stranger.key),
  };

  for (const kind of Object.keys(MIGRATION_SOCKETS) as MigrationSocket[]) {
    const server = createServer({ allowHalfOpen: true }, (c) => {
      c.write(`${kind}:`);
      c.pipe(c);
    });
    server.listen(join(dir, `pod-${MIGRATION_SOCKETS[kind]}`));
    await once(server, "listening");
    podSockets.push(server);
  }
  target = await MigrationTargetProxy.start({
    host: "127.0.0.1",
    port: 0,
    tls: t("handler"),
    allowedPeers: [HANDLER],
    log: (_, message, fields) => refusals.push(`${message}: ${JSON.stringify(fields)}`),
  });
  target.allow("m-1", (kind) =>
    Promise.resolve({ path: join(dir, `pod-${MIGRATION_SOCKETS[kind]}`), close: () => Promise.resolve() }),
  );
});

afterAll(async () => {
  await target.close();
  for (const server of podSockets) server.close();
  await rm(dir, { recursive: true, force: true });
});

/** Connects to a unix socket, sends `send`, and reads until `length` bytes came back. */
function exchange(path: string, send: Buffer, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const socket: Socket = connect({ path, allowHalfOpen: true }, () => socket.end(send));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      if (received >= length) {
        socket.destroy();
        resolve(Buffer.concat(chunks));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => {
      if (received < length)
        reject(new Error(`the connection closed after ${String(received)} of ${String(length)} bytes`));
    });
  });
}

const dial = (who: ProxyTls, migration = "m-1", socket: MigrationSocket = "memory", serverName = HANDLER) =>
  dialMigrationTarget({ migration, target: { host: "127.0.0.1", port: target.port }, tls: who, serverName }, socket);

describe("the migration proxy", () => {
  it(
    "carries each socket's connections from the source pod's folder to the same socket of " +
      "the target pod, both ways, with backpressure",
    async () => {
      const sourceDir = await mkdtemp(join(dir, "source-"));
      const source = await startMigrationSourceProxy({
        dir: sourceDir,
        migration: "m-1",
        target: { host: "127.0.0.1", port: target.port },
        tls: t("handler"),
        serverName: HANDLER,
      });
      try {
        // Made writable for all as bound: the launcher's user connects.
        expect((await stat(join(sourceDir, MIGRATION_SOCKETS.libvirt))).mode & 0o777).toBe(0o777);
        expect((await exchange(join(sourceDir, MIGRATION_SOCKETS.libvirt), Buffer.from("hello"), 13)).toString()).toBe(
          "libvirt:hello",
        );
        // A migration stream's worth: 16 MiB through, every byte in order.
        const payload = Buffer.alloc(16 * 1024 * 1024, 0);
        for (let i = 0; i < payload.length; i += 4096) payload.writeUInt32BE(i, i);
        const echoed = await exchange(
          join(sourceDir, MIGRATION_SOCKETS.memory),
          payload,
          payload.length + "memory:".length,
        );
        expect(echoed.subarray(0, 7).toString()).toBe("memory:");
        expect(echoed.subarray(7).equals(payload)).toBe(true);
        expect((await exchange(join(sourceDir, MIGRATION_SOCKETS.disks), Buffer.from("nbd"), 9)).toString()).toBe(
          "disks:nbd",
        );
      } finally {
        await source.close();
      }
      // 16 MiB through two TLS hops takes about a second here, five and more on a machine busy with other suites.
    },
    60_000,
  );

  it("refuses a peer with no client certificate at the handshake", async () => {
    await expect(dial({ ca: t("handler").ca, cert: "", key: "" })).rejects.toThrow(
      /did not answer \(a refused certificate\?\)|certificate required/,
    );
  });

  it("refuses a certificate of another CA, even with the handler's name", async () => {
    await expect(dial(t("stranger"))).rejects.toThrow(/did not answer \(a refused certificate\?\)|unknown ca/);
  });

  it("refuses a certificate of the cluster's CA that is not a handler's, saying so", async () => {
    await expect(dial(t("api"))).rejects.toThrow(
      "the target handler refused: the certificate's name \"kubevirt-ts-api\" is not a handler's",
    );
  });

  it("is refused by the source when the target's certificate is not a handler's", async () => {
    const impostor = await MigrationTargetProxy.start({
      host: "127.0.0.1",
      port: 0,
      tls: t("wrongServer"),
      allowedPeers: [HANDLER],
    });
    try {
      await expect(
        dialMigrationTarget(
          {
            migration: "m-1",
            target: { host: "127.0.0.1", port: impostor.port },
            tls: t("handler"),
            serverName: HANDLER,
          },
          "memory",
        ),
      ).rejects.toThrow(/Hostname\/IP does not match|kubevirt-ts-handler/);
    } finally {
      await impostor.close();
    }
  });

  it("joins only migrations its handler let through, until revoked", async () => {
    await expect(dial(t("handler"), "m-2")).rejects.toThrow(
      "the target handler refused: no migration m-2 comes to this node",
    );
    target.allow("m-2", () => Promise.reject(new Error("the pod's sockets volume has no such socket")));
    await expect(dial(t("handler"), "m-2")).rejects.toThrow(
      "the target's memory socket cannot be reached: the pod's sockets volume has no such socket",
    );
    target.revoke("m-2");
    await expect(dial(t("handler"), "m-2")).rejects.toThrow("no migration m-2 comes to this node");
    expect(target.allowed()).toEqual(["m-1"]);
  });

  it("refuses a header that names no socket of the protocol", async () => {
    await expect(dial(t("handler"), "m-1", "../../etc/passwd" as MigrationSocket)).rejects.toThrow(
      /not a migration header/,
    );
    await expect(dial(t("handler"), "../m-1")).rejects.toThrow(/not a migration header: must be a migration's uid/);
    expect(refusals.some((line) => line.includes("not a migration header"))).toBe(true);
  });
});
