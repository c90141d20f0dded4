import { once } from "node:events";
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Pki } from "@kubevirt-ts/control-plane";
import type { MigrationReport } from "@kubevirt-ts/launcher-protocol";
import { ConsoleServer, SocketsVolume, handlerPath, portForwardSocket } from "@kubevirt-ts/node-contract";
import {
  LAUNCHER_UID,
  type PortForwardSegment,
  type VirtualMachineInstance,
  defaultVmiSpec,
} from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ConnectionOptions } from "node:tls";
import { type ClientOptions, WebSocket } from "ws";
import {
  CONSOLE_MAX_FRAME_BYTES,
  ConsoleRefusal,
  type ConsoleServerHandle,
  startConsoleServer,
} from "./console-server.ts";
import { SERIAL_LOG_NAME, SocketName, podVolumePath } from "./pod-volume.ts";

/** A migration the node sent, as its handler keeps it. */
const SENT: MigrationReport = {
  namespace: "ns",
  name: "running",
  observed: "2026-11-26T20:00:00.000Z",
  status: {
    role: "Source",
    migrationUid: "uid-1",
    phase: "Completed",
    mode: "PreCopy",
    progress: { elapsedMs: 4000, dataProcessed: 70_000_000, downtimeMs: 42 },
  },
};

const SCREENSHOT = Buffer.from("\x89PNG\r\n\x1a\n-a-screenshot", "latin1");

// The console server with real TLS certificates, real websockets and a real
// unix socket standing where QEMU's serial console would be.

let dir: string;
let server: ConsoleServerHandle;
let qemuSerial: Server;
let qemuVnc: Server;
/** What each client of QEMU's VNC server sent it, in the order they connected. */
const vncClients: Buffer[][] = [];
/**
 * The launcher's tunnels to the guest's ports, by socket path: each answers with its port and what it was sent,
 * reversed.
 */
const tunnels = new Map<string, Promise<Server>>();
const tls: Record<string, { cert: Buffer; key: Buffer }> = {};
let ca: Buffer;
const acted: string[] = [];

function vmi(name: string, phase: string, serial = true, podNetwork = true): VirtualMachineInstance {
  const spec = defaultVmiSpec({
    domain: { devices: { autoattachSerialConsole: serial, autoattachPodInterface: podNetwork } },
  });
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name, namespace: "ns", uid: `uid-${name}` },
    spec,
    status: { phase },
  } as VirtualMachineInstance;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "console-"));
  const pki = new Pki(dir);
  await pki.createCa("console-ca");
  ca = await readFile(pki.ca.cert);
  const issue = async (name: string, usage: "server" | "client", hosts?: string[]) => {
    const pair = await pki.issue({ name, commonName: name, usage, hosts });
    tls[name] = { cert: await readFile(pair.cert), key: await readFile(pair.key) };
  };
  await issue(ConsoleServer.handlerIdentity, "server", [ConsoleServer.handlerIdentity]);
  await issue(ConsoleServer.apiIdentity, "client");
  await issue("kubevirt-ts-web", "client");

  const podsDir = join(dir, "pods");
  const socket = podVolumePath(podsDir, "pod-1", SocketName.Serial);
  await mkdir(dirname(socket), { recursive: true });
  // QEMU's serial socket: echoes what it is sent, in capitals; one client at a time.
  qemuSerial = createServer({ pauseOnConnect: false }, (c) =>
    c.on("data", (d: Buffer) => c.write(d.toString().toUpperCase())),
  );
  qemuSerial.maxConnections = 1;
  qemuSerial.listen(socket);
  await once(qemuSerial, "listening");
  await chown(socket, LAUNCHER_UID, LAUNCHER_UID);
  // QEMU's VNC server: many clients at once, each greeted with the protocol version; it keeps what each sends.
  const vncSocket = podVolumePath(podsDir, "pod-1", SocketName.Vnc);
  qemuVnc = createServer((c) => {
    const got: Buffer[] = [];
    vncClients.push(got);
    c.write("RFB 003.008\n");
    c.on("data", (d: Buffer) => got.push(d));
  });
  qemuVnc.listen(vncSocket);
  await once(qemuVnc, "listening");
  await chown(vncSocket, LAUNCHER_UID, LAUNCHER_UID);
  const log = podVolumePath(podsDir, "pod-1", SERIAL_LOG_NAME);
  await writeFile(log, "[    0.000000] Linux version 6.1\nDebian GNU/Linux 12 tiny ttyS0\n\ntiny login: ");
  await chown(log, LAUNCHER_UID, LAUNCHER_UID);

  const handler = tls[ConsoleServer.handlerIdentity];
  if (!handler) throw new Error("no handler certificate");
  server = await startConsoleServer({
    port: 0,
    host: "127.0.0.1",
    tls: { ca, ...handler },
    allowedClients: [ConsoleServer.apiIdentity],
    podsDir,
    act: (target, action) => {
      acted.push(`${action} ${target.vmi.metadata.name ?? ""}`);
      return Promise.resolve({ state: action === "pause" ? "Paused" : "Running" });
    },
    guestAgentInfo: (target) =>
      Promise.resolve({ hostname: target.vmi.metadata.name ?? "", userList: [{ userName: "tester" }] }),
    freeze: (target, action, seconds) => {
      acted.push(`${action} ${String(seconds)} ${target.vmi.metadata.name ?? ""}`);
      return Promise.resolve({ state: "Running", ...(action === "freeze" ? { fsFreezeStatus: "frozen" } : {}) });
    },
    // The launcher writes its screenshot into its pod's volume; here, a few bytes stand in for the PNG.
    screenshot: async () => {
      const file = podVolumePath(podsDir, "pod-1", SocketsVolume.screenshot);
      await writeFile(file, SCREENSHOT);
      await chown(file, LAUNCHER_UID, LAUNCHER_UID);
      return { bytes: SCREENSHOT.length };
    },
    portForward: async (target, forward) => {
      acted.push(`portforward ${String(forward.port)} ${target.vmi.metadata.name ?? ""}`);
      if (forward.port === 7) throw new Error("nothing listens there");
      // One tunnel per port, as the launcher keeps: two sessions opened at once share it.
      const path = podVolumePath(podsDir, target.podUid, portForwardSocket(forward));
      let ready = tunnels.get(path);
      if (!ready) {
        const tunnel = createServer((c) =>
          c.on("data", (d: Buffer) =>
            c.write(`${String(forward.port)}:${Array.from(d.toString()).reverse().join("")}`),
          ),
        );
        ready = (async () => {
          tunnel.listen(path);
          await once(tunnel, "listening");
          await chown(path, LAUNCHER_UID, LAUNCHER_UID);
          return tunnel;
        })();
        tunnels.set(path, ready);
      }
      await ready;
      return {};
    },
    lookup: (namespace, name) => {
      if (name === "no-network") return { vmi: vmi(name, "Running", true, false), podUid: "pod-1" };
      if (name === "running") return { vmi: vmi(name, "Running"), podUid: "pod-1" };
      if (name === "with-agent") {
        const withAgent = vmi(name, "Running");
        withAgent.status = { ...withAgent.status, conditions: [{ type: "AgentConnected", status: "True" }] };
        return { vmi: withAgent, podUid: "pod-1" };
      }
      if (name === "scheduled") return { vmi: vmi(name, "Scheduled"), podUid: "pod-1" };
      if (name === "no-serial") return { vmi: vmi(name, "Running", false), podUid: "pod-1" };
      if (name === "paused") {
        const paused = vmi(name, "Running");
        paused.status = { ...paused.status, conditions: [{ type: "Paused", status: "True" }] };
        return { vmi: paused, podUid: "pod-1" };
      }
      throw new ConsoleRefusal(404, `no VMI ${namespace}/${name} runs on node test`);
    },
    stats: () =>
      Promise.resolve([
        {
          namespace: "ns",
          name: "running",
          stats: { cpu: { timeNs: 5e9 }, vcpus: [], memory: { rssKiB: 100 }, interfaces: [], disks: [] },
        },
      ]),
    migrationReport: (uid) => (uid === SENT.status.migrationUid ? SENT : undefined),
    log: createLogger({ component: "test", level: "error" }),
    registry: new Registry(),
  });
}, 60_000);

afterAll(async () => {
  await server.close();
  qemuSerial.close();
  qemuVnc.close();
  for (const tunnel of tunnels.values()) (await tunnel).close();
  await rm(dir, { recursive: true, force: true });
});

function open(
  name: string,
  what: "console" | "vnc" | PortForwardSegment = "console",
  client: string = ConsoleServer.apiIdentity,
  search = "",
): WebSocket {
  const options: ClientOptions & ConnectionOptions = { ca, ...tls[client], servername: ConsoleServer.handlerIdentity };
  return new WebSocket(`wss://127.0.0.1:${String(server.port)}${vmiPath(name, what)}${search}`, options);
}

/** A viewer of the shared serial console or display: the bytes it got, and its sharing messages. */
function viewer(who: string, what: "console" | "vnc" = "console") {
  const ws = open("running", what, ConsoleServer.apiIdentity, `?shared=true&viewer=${who}`);
  const bytes: Buffer[] = [];
  const messages: { type: string; you?: boolean; holder?: string; viewers?: number; from?: string }[] = [];
  ws.on("message", (data: Buffer, binary: boolean) => {
    if (binary) bytes.push(data);
    else messages.push(JSON.parse(data.toString()) as (typeof messages)[number]);
  });
  return { ws, text: () => Buffer.concat(bytes).toString(), messages, last: () => messages.at(-1) };
}

function refusal(ws: WebSocket): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res
        .setEncoding("utf8")
        .on("data", (c: string) => (body += c))
        .on("end", () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
    });
    ws.on("open", () => {
      reject(new Error("the session opened"));
    });
    ws.on("error", () => undefined);
  });
}

/** A VMI's path on the wire, as virt-api sends it (node-contract's handlerRoutes). */
const vmiPath = (name: string, word: string) => `/v1/namespaces/ns/virtualmachineinstances/${name}/${word}`;

function call(
  method: string,
  name: string,
  what:
    | "serial-log"
    | "pause"
    | "unpause"
    | "softreboot"
    | "reset"
    | "guestosinfo"
    | "userlist"
    | "vnc/screenshot"
    | "freeze"
    | "unfreeze",
  search = "",
): Promise<string> {
  return callPath(method, `${vmiPath(name, what)}${search}`);
}

function callPath(method: string, path: string): Promise<string> {
  const api = tls[ConsoleServer.apiIdentity];
  return new Promise<string>((resolve, reject) => {
    const req = request(
      { method, host: "127.0.0.1", port: server.port, path, ca, ...api, servername: ConsoleServer.handlerIdentity },
      (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("end", () => {
            resolve(`${String(res.statusCode)} ${text}`);
          });
      },
    );
    req.on("error", reject).end();
  });
}

function firstMessage(ws: WebSocket): Promise<Buffer> {
  return new Promise((resolve) =>
    ws.once("message", (data: Buffer, binary: boolean) => {
      expect(binary).toBe(true);
      resolve(data);
    }),
  );
}

describe("the handler's console server", { timeout: 30_000 }, () => {
  it("carries raw bytes both ways between the API and the VM's serial console", async () => {
    const ws = open("running");
    await once(ws, "open");
    const reply = firstMessage(ws);
    ws.send(Buffer.from("ls /\n"));
    expect((await reply).toString()).toBe("LS /\n");
    ws.close();
    await once(ws, "close");
  });

  it("lets a new session take over from the old one", async () => {
    const first = open("running");
    await once(first, "open");
    const closed = once(first, "close") as Promise<[number, Buffer]>;
    const second = open("running");
    await once(second, "open");
    const [code, reason] = await closed;
    expect(code).toBe(1000);
    expect(reason.toString()).toBe("a newer session took over this console");
    const reply = firstMessage(second);
    second.send(Buffer.from("still here"));
    expect((await reply).toString()).toBe("STILL HERE");
    second.close();
  });

  it("closes a session whose frame is over CONSOLE_MAX_FRAME_BYTES (1009), and goes on serving the next", async () => {
    const big = open("running");
    await once(big, "open");
    const closed = once(big, "close") as Promise<[number, Buffer]>;
    big.send(Buffer.alloc(CONSOLE_MAX_FRAME_BYTES + 1));
    expect((await closed)[0]).toBe(1009);
    const next = open("running");
    await once(next, "open");
    const reply = firstMessage(next);
    next.send(Buffer.from("after"));
    expect((await reply).toString()).toBe("AFTER");
    next.close();
  });

  it(
    "answers the last figures of a migration the node sent, by its uid; 404 " + "for one it did not, to GET only",
    async () => {
      expect(await callPath("GET", handlerPath("migration", { uid: "uid-1" }))).toBe(`200 ${JSON.stringify(SENT)}`);
      expect(await callPath("GET", handlerPath("migration", { uid: "uid-2" }))).toMatch(
        /^404 this node sent no migration uid-2/,
      );
      expect(await callPath("PUT", handlerPath("migration", { uid: "uid-1" }))).toMatch(/^405 /);
    },
  );

  it("answers the domain stats of every VMI on the node, to GET only", async () => {
    const stats = { cpu: { timeNs: 5e9 }, vcpus: [], memory: { rssKiB: 100 }, interfaces: [], disks: [] };
    expect(await callPath("GET", handlerPath("stats", {}))).toBe(
      `200 ${JSON.stringify({ vmis: [{ namespace: "ns", name: "running", stats }] })}`,
    );
    expect(await callPath("PUT", handlerPath("stats", {}))).toMatch(/^405 /);
  });

  it(
    "shares a console among viewers: all see the output, only the holder's keys reach the " +
      "guest, the holder gives the keyboard to who asks",
    async () => {
      const alice = viewer("alice");
      await once(alice.ws, "open");
      await vi.waitFor(() => {
        expect(alice.last()).toEqual({ type: "state", holder: "alice", you: true, viewers: 1 });
      });
      const bob = viewer("bob");
      await once(bob.ws, "open");
      await vi.waitFor(() => {
        expect(bob.last()).toEqual({ type: "state", holder: "alice", you: false, viewers: 2 });
      });

      bob.ws.send(Buffer.from("from bob\n"));
      alice.ws.send(Buffer.from("from alice\n"));
      await vi.waitFor(() => {
        expect(bob.text()).toBe("FROM ALICE\n");
      });
      expect(alice.text()).toBe("FROM ALICE\n");

      bob.ws.send(JSON.stringify({ type: "request" }));
      await vi.waitFor(() => {
        expect(alice.last()).toEqual({ type: "request", from: "bob" });
      });
      alice.ws.send(JSON.stringify({ type: "grant" }));
      await vi.waitFor(() => {
        expect(bob.last()).toEqual({ type: "state", holder: "bob", you: true, viewers: 2 });
      });
      bob.ws.send(Buffer.from("now bob\n"));
      await vi.waitFor(() => {
        expect(alice.text()).toBe("FROM ALICE\nNOW BOB\n");
      });

      // A client that does not share (virtctl console) takes over from every viewer, as in KubeVirt.
      const closed = [once(alice.ws, "close"), once(bob.ws, "close")];
      const takeover = open("running");
      await once(takeover, "open");
      const [[, reason]] = (await Promise.all(closed)) as [[number, Buffer], [number, Buffer]];
      expect(reason.toString()).toBe("a newer session took over this console");
      const reply = firstMessage(takeover);
      takeover.send(Buffer.from("alone\n"));
      expect((await reply).toString()).toBe("ALONE\n");
      takeover.close();
      await once(takeover, "close");
    },
  );

  it(
    "shares a display among viewers: each has its own connection to QEMU's VNC server, which " +
      "none may have alone, and only the holder's input reaches it",
    async () => {
      const handshake = Buffer.from("RFB 003.008\n\x01\x00", "latin1");
      const updateRequest = Buffer.from([3, 1, 0, 0, 0, 0, 4, 0, 3, 0]);
      const key = (keysym: number) => Buffer.from([4, 1, 0, 0, 0, 0, 0, keysym]);
      const seen = (at: number) => Buffer.concat(vncClients[at] ?? []);
      const first = vncClients.length;
      const alice = viewer("alice", "vnc");
      await once(alice.ws, "open");
      await vi.waitFor(() => {
        expect(alice.last()).toEqual({ type: "state", holder: "alice", you: true, viewers: 1 });
      });
      const bob = viewer("bob", "vnc");
      await once(bob.ws, "open");
      await vi.waitFor(() => {
        expect(bob.last()).toEqual({ type: "state", holder: "alice", you: false, viewers: 2 });
      });
      // Both see the display: QEMU greets each of them.
      await vi.waitFor(() => {
        expect([alice.text(), bob.text()]).toEqual(["RFB 003.008\n", "RFB 003.008\n"]);
      });

      alice.ws.send(Buffer.concat([handshake, updateRequest, key(0x61)]));
      bob.ws.send(Buffer.concat([handshake, updateRequest, key(0x62)]));
      // Each asked to share whatever its ClientInit said; bob's key stayed with the handler.
      await vi.waitFor(() => {
        expect(seen(first)).toEqual(
          Buffer.concat([handshake.subarray(0, 13), Buffer.from([1]), updateRequest, key(0x61)]),
        );
      });
      await vi.waitFor(() => {
        expect(seen(first + 1)).toEqual(Buffer.concat([handshake.subarray(0, 13), Buffer.from([1]), updateRequest]));
      });

      bob.ws.send(JSON.stringify({ type: "request" }));
      await vi.waitFor(() => {
        expect(alice.last()).toEqual({ type: "request", from: "bob" });
      });
      alice.ws.send(JSON.stringify({ type: "grant" }));
      await vi.waitFor(() => {
        expect(bob.last()).toEqual({ type: "state", holder: "bob", you: true, viewers: 2 });
      });
      bob.ws.send(key(0x63));
      alice.ws.send(key(0x64));
      await vi.waitFor(() => {
        expect(seen(first + 1).subarray(-8)).toEqual(key(0x63));
      });
      expect(seen(first).subarray(-8)).toEqual(key(0x61));

      // What cannot be cut into RFB messages ends that viewer, not the others.
      const [code, reason] = await (async () => {
        const closed = once(bob.ws, "close") as Promise<[number, Buffer]>;
        bob.ws.send(Buffer.from([7, 0, 0, 0]));
        return closed;
      })();
      expect([code, reason.toString()]).toEqual([
        1008,
        "the display could not be shared: unknown RFB client message type 7",
      ]);
      await vi.waitFor(() => {
        expect(alice.last()).toEqual({ type: "state", holder: "alice", you: true, viewers: 1 });
      });

      // A client that does not share (virtctl vnc) takes over, as in KubeVirt.
      const closedAlice = once(alice.ws, "close") as Promise<[number, Buffer]>;
      const takeover = open("running", "vnc");
      await once(takeover, "open");
      expect((await closedAlice)[1].toString()).toBe("a newer session took over this console");
      takeover.close();
      await once(takeover, "close");
    },
  );

  it("refuses a client whose certificate names another component", async () => {
    expect(await refusal(open("running", "console", "kubevirt-ts-web"))).toEqual({
      status: 403,
      body: "this client may not use the console server\n",
    });
  });

  it("refuses a client without a certificate in the TLS handshake", async () => {
    const options: ClientOptions & ConnectionOptions = { ca, servername: ConsoleServer.handlerIdentity };
    const ws = new WebSocket(`wss://127.0.0.1:${String(server.port)}${vmiPath("running", "console")}`, options);
    ws.on("unexpected-response", () => {
      throw new Error("got an HTTP answer");
    });
    const [error] = (await once(ws, "error")) as [Error];
    expect(error.message).toMatch(/certificate required|socket hang up|ECONNRESET/);
  });

  it("says why a console cannot be opened: not running, no serial console, no such VMI", async () => {
    expect(await refusal(open("scheduled"))).toEqual({
      status: 409,
      body: "the VMI is not running (phase Scheduled); wait until it is Running\n",
    });
    expect(await refusal(open("no-serial"))).toEqual({
      status: 400,
      body: "the VMI has no serial console: spec.domain.devices.autoattachSerialConsole is false\n",
    });
    expect(await refusal(open("gone"))).toEqual({ status: 404, body: "no VMI ns/gone runs on node test\n" });
  });

  it("serves the serial log, which holds the boot output nobody watched", async () => {
    expect(await call("GET", "running", "serial-log")).toBe(
      "200 [    0.000000] Linux version 6.1\nDebian GNU/Linux 12 tiny ttyS0\n\ntiny login: ",
    );
  });

  it("carries out pause, unpause, soft reboot and reset on a domain in a state that allows them", async () => {
    expect(await call("PUT", "running", "pause")).toBe('200 {"state":"Paused"}');
    expect(await call("PUT", "paused", "unpause")).toBe('200 {"state":"Running"}');
    expect(await call("PUT", "running", "softreboot")).toBe('200 {"state":"Running"}');
    expect(await call("PUT", "running", "reset")).toBe('200 {"state":"Running"}');
    expect(acted).toEqual(["pause running", "unpause paused", "softReboot running", "reset running"]);
    expect(await call("PUT", "running", "unpause")).toBe("409 the VMI is not paused\n");
    expect(await call("PUT", "paused", "reset")).toBe("409 the VMI is paused; unpause it before reset\n");
    expect(await call("PUT", "scheduled", "pause")).toBe(
      "409 the VMI is not running (phase Scheduled); pause needs a running VMI\n",
    );
    expect(await call("PUT", "paused", "pause")).toBe("409 the VMI is already paused\n");
    expect(await call("PUT", "paused", "softreboot")).toBe("409 the VMI is paused; unpause it before soft reboot\n");
    expect(await call("GET", "running", "pause")).toBe("405 pause is done with PUT\n");
    expect(acted).toHaveLength(4);
  });

  it(
    "freezes and thaws the file systems of a guest whose agent is " + "connected, for at most the timeout asked",
    async () => {
      acted.length = 0;
      expect(await call("PUT", "with-agent", "freeze", "?unfreezeTimeoutSeconds=300")).toBe(
        '200 {"state":"Running","fsFreezeStatus":"frozen"}',
      );
      expect(await call("PUT", "with-agent", "unfreeze")).toBe('200 {"state":"Running"}');
      expect(acted).toEqual(["freeze 300 with-agent", "unfreeze 0 with-agent"]);
      expect(await call("PUT", "running", "freeze")).toBe("409 VMI does not have guest agent connected\n");
      expect(await call("PUT", "with-agent", "freeze", "?unfreezeTimeoutSeconds=-1")).toBe(
        "400 unfreezeTimeoutSeconds is a whole number of seconds, 0 or more\n",
      );
      expect(await call("GET", "with-agent", "freeze")).toBe("405 freeze is done with PUT\n");
      expect(acted).toHaveLength(2);
    },
  );

  it("serves the screenshot the launcher wrote, as PNG, of a VMI with a display", async () => {
    expect(await call("GET", "running", "vnc/screenshot")).toBe(`200 ${SCREENSHOT.toString("utf8")}`);
    expect(await call("GET", "scheduled", "vnc/screenshot")).toBe(
      "409 the VMI is not running (phase Scheduled); wait until it is Running\n",
    );
    expect(await call("PUT", "running", "vnc/screenshot")).toBe("405 vnc/screenshot is read with GET\n");
  });

  it("answers what the guest agent tells, in KubeVirt's shapes, only while the agent is connected", async () => {
    expect(await call("GET", "with-agent", "guestosinfo")).toBe(
      '200 {"hostname":"with-agent","userList":[{"userName":"tester"}]}',
    );
    expect(await call("GET", "with-agent", "userlist")).toBe('200 {"metadata":{},"items":[{"userName":"tester"}]}');
    expect(await call("GET", "running", "userlist")).toBe("409 VMI does not have guest agent connected\n");
    expect(await call("GET", "scheduled", "guestosinfo")).toBe("409 VMI is not running (phase Scheduled)\n");
    expect(await call("PUT", "with-agent", "guestosinfo")).toBe("405 guestosinfo is read with GET\n");
  });

  it(
    "tunnels to ports of the guest through the launcher, as many at once as " + "are opened, and says why it cannot",
    async () => {
      acted.length = 0;
      const ssh = open("running", "portforward/22/tcp");
      const web = open("running", "portforward/80/tcp");
      const again = open("running", "portforward/22/tcp");
      await Promise.all([ssh, web, again].map((ws) => once(ws, "open")));
      const answers = [ssh, web, again].map((ws) => firstMessage(ws));
      ssh.send(Buffer.from("ssh"));
      web.send(Buffer.from("http"));
      again.send(Buffer.from("abc"));
      expect((await Promise.all(answers)).map((b) => b.toString())).toEqual(["22:hss", "80:ptth", "22:cba"]);
      for (const ws of [ssh, web, again]) ws.close();
      // The three sessions were opened at once: the server may take them in any order.
      expect(acted.toSorted()).toEqual(["portforward 22 running", "portforward 22 running", "portforward 80 running"]);

      expect(await refusal(open("running", "portforward/22/udp" as PortForwardSegment))).toEqual({
        status: 400,
        body: "protocol udp is not forwarded yet: only tcp is\n",
      });
      expect(await refusal(open("running", "portforward/70000/tcp"))).toEqual({
        status: 400,
        body: "port 70000 is not a port number: give one from 1 to 65535\n",
      });
      expect(await refusal(open("scheduled", "portforward/22/tcp"))).toEqual({
        status: 409,
        body: "the VMI is not running (phase Scheduled); a port can be forwarded to a Running VMI only\n",
      });
      expect((await refusal(open("no-network", "portforward/22/tcp"))).status).toBe(400);
      expect(await refusal(open("running", "portforward/7/tcp"))).toEqual({
        status: 409,
        body: "the launcher could not forward port 7: nothing listens there\n",
      });
    },
  );
});
