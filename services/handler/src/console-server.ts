import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Server, createServer } from "node:https";
import { type Socket, connect } from "node:net";
import type { Duplex } from "node:stream";
import type { PeerCertificate, TLSSocket } from "node:tls";
import { type GuestAgentInfo, guestAgentAnswer, guestAgentRefusal, vmiActionAvailability } from "@kubevirt-ts/vm-rules";
import {
  type HandlerRequestRoute,
  type HandlerRoute,
  type HandlerRouteMatch,
  HandlerRouteRefusal,
  type HandlerStreamRoute,
  SocketsVolume,
  handlerAnswerMaxBytes,
  matchHandlerRoute,
  portForwardSocket,
} from "@kubevirt-ts/node-contract";
import {
  type ConsoleKind,
  type PortForward,
  type StreamKind,
  type FreezeAction,
  type VmiDomainAction,
  type VirtualMachineInstance,
  domainActionOf,
  parsePortForward,
} from "@kubevirt-ts/kubevirt-api";
import type { MigrationReport } from "@kubevirt-ts/launcher-protocol";
import { type Logger, StatusError, keepAlive } from "@kubevirt-ts/runtime";
import { Gauge, type Registry } from "prom-client";
import { type WebSocket, WebSocketServer } from "ws";
import { SERIAL_LOG_NAME, SocketName, openPodSocket, readPodFileTail } from "./pod-volume.ts";
import { SharedConsole, SharedDisplay, type SharedSession, pipeToViewer, writeToGuest } from "./shared-console.ts";
import type { VmiStats } from "./vm-metrics.ts";
import { limits } from "./limits.ts";

// The handler's console server, KubeVirt's port 8186: the serial console and
// VNC of this node's VMIs as websockets of raw bytes, the serial log, and the
// actions carried out on a running domain (pause, unpause, soft reboot, reset),
// the display's screenshot, what the guest agent tells, and tunnels to ports
// of the guest (portforward/<port>/<protocol>, through the launcher).
// Only the API may connect: the client's certificate must be signed by the
// cluster's console CA and name the API. Each VMI has at most one console
// and one VNC session; a new one takes over from the old, as in KubeVirt,
// unless the clients ask to share (?shared=true): then several watch one
// console or display and one holds the keyboard (shared-console.ts).
// Port forwards are as many as the clients open. The routes, their methods,
// queries and answers are node-contract's handlerRoutes (virt-api builds its
// requests from the same table); each is one small function here.

export interface ConsoleTarget {
  vmi: VirtualMachineInstance;
  /** The launcher pod that runs the VMI's domain. */
  podUid: string;
}

/** Why a request was refused, with its HTTP status. */
export class ConsoleRefusal extends StatusError {}

export interface ConsoleServerOptions {
  port: number;
  host?: string;
  tls: { ca: Buffer; cert: Buffer; key: Buffer };
  /** The certificate names allowed to connect. */
  allowedClients: readonly string[];
  podsDir: string;
  /** The VMI and its launcher pod, or a ConsoleRefusal. */
  lookup: (namespace: string, name: string) => ConsoleTarget;
  /** Carries out an action on the target's domain through its launcher. */
  act: (target: ConsoleTarget, action: VmiDomainAction) => Promise<unknown>;
  /** What the guest's agent tells, asked through the target's launcher. */
  guestAgentInfo: (target: ConsoleTarget) => Promise<GuestAgentInfo>;
  /**
   * Freezes (for at most the timeout, 0: until thawed) or thaws the guest's file systems through the target's launcher.
   */
  freeze: (target: ConsoleTarget, action: FreezeAction, unfreezeTimeoutSeconds: number) => Promise<unknown>;
  /** Has the target's launcher write its display's screenshot (SocketsVolume.screenshot); its size in bytes. */
  screenshot: (target: ConsoleTarget) => Promise<{ bytes: number }>;
  /** Has the target's launcher open its tunnel to the guest's port (portForwardSocket). */
  portForward: (target: ConsoleTarget, forward: PortForward) => Promise<unknown>;
  /** The domain stats of every VMI running on this node (the stats route). */
  stats: () => Promise<VmiStats[]>;
  /** The last figures of a migration this node sent (the migration route); undefined when it sent none by that uid. */
  migrationReport: (migrationUid: string) => MigrationReport | undefined;
  log: Logger;
  registry: Registry;
  pingIntervalMs?: number;
}

export interface ConsoleServerHandle {
  port: number;
  close(): Promise<void>;
}

/**
 * The largest screenshot served: what the API reads of one (the route's bound), no more than the handler reads of a
 * pod's file (limits.podFileReadBytes).
 */
export const SCREENSHOT_MAX_BYTES = Math.min(handlerAnswerMaxBytes("screenshot"), limits.podFileReadBytes);

/** The largest websocket frame the handler takes from the API: limits.consoleFrameBytes. */
export const CONSOLE_MAX_FRAME_BYTES = limits.consoleFrameBytes;

/** What a client gets of the serial log: its last 512 KiB. */
export const SERIAL_LOG_TAIL_BYTES = handlerAnswerMaxBytes("serialLog");

/** A request of one route, its params and query read (matchHandlerRoute). */
type Matched<R extends HandlerRoute> = Extract<HandlerRouteMatch, { route: R }>;

/** The route a request asks for (the table's), or a ConsoleRefusal with the table's status and words. */
function route(req: IncomingMessage, upgrade: boolean): HandlerRouteMatch {
  try {
    return matchHandlerRoute(req.method, req.url, upgrade);
  } catch (error) {
    throw error instanceof HandlerRouteRefusal ? new ConsoleRefusal(error.status, error.message) : error;
  }
}

/**
 * Why a domain action or console cannot be had on the VMI now (availableActions' rules), with its HTTP status;
 * undefined when it can.
 */
export function actionUnavailable(
  vmi: VirtualMachineInstance,
  action: VmiDomainAction | StreamKind,
): ConsoleRefusal | undefined {
  const availability = vmiActionAvailability(vmi, action);
  return availability.available
    ? undefined
    : new ConsoleRefusal(availability.by === "spec" ? 400 : 409, availability.reason);
}

function peerName(req: IncomingMessage): string | undefined {
  // An empty object when the peer sent no certificate.
  const cert: Partial<PeerCertificate> = (req.socket as TLSSocket).getPeerCertificate();
  const cn = cert.subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn;
}

function refuseUpgrade(socket: Duplex, error: unknown): void {
  const status = error instanceof ConsoleRefusal ? error.status : 500;
  const message = error instanceof Error ? error.message : String(error);
  socket.end(
    `HTTP/1.1 ${String(status)} ${status === 500 ? "Internal Server Error" : "Refused"}\r\nContent-Type: ` +
      `text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${message}\n`,
  );
}

export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServerHandle> {
  const { log, podsDir, lookup } = options;
  const active = {
    console: new Gauge({
      name: "kubevirt_console_active_connections",
      help: "Open serial console sessions.",
      labelNames: ["namespace", "vmi"],
      registers: [options.registry],
    }),
    vnc: new Gauge({
      name: "kubevirt_vnc_active_connections",
      help: "Open VNC sessions.",
      labelNames: ["namespace", "vmi"],
      registers: [options.registry],
    }),
    portforward: new Gauge({
      name: "kubevirt_portforward_active_tunnels",
      help: "Open port forwards into guests.",
      labelNames: ["namespace", "vmi"],
      registers: [options.registry],
    }),
  };
  const sessions = new Map<string, WebSocket>();
  const websockets = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: CONSOLE_MAX_FRAME_BYTES,
  });
  // ws reports a peer's broken or oversized frame as an "error" event on its websocket (and closes it, 1009 for a frame
  // over maxPayload): unlistened, the event would end the process.
  const endOnError = (ws: WebSocket) => {
    ws.on("error", (error) => {
      log.warn("console websocket error", { error });
    });
  };
  const pingIntervalMs = options.pingIntervalMs ?? 30_000;

  const authorized = (req: IncomingMessage): boolean => {
    const name = peerName(req);
    if (name !== undefined && options.allowedClients.includes(name)) return true;
    log.warn("refused a console client whose certificate names another component", { peer: name ?? "(none)" });
    return false;
  };

  const json = (res: ServerResponse, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(200, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
  };
  const noStore = { "cache-control": "no-store" };
  const failure = (error: unknown) => (error instanceof Error ? error.message : String(error));

  /** Each plain route of the table (node-contract's handlerRoutes), as a small function. */
  const requests: { [R in HandlerRequestRoute]: (res: ServerResponse, request: Matched<R>) => Promise<void> | void } = {
    migration: (res, { params: { uid } }) => {
      const report = options.migrationReport(uid);
      if (!report) throw new ConsoleRefusal(404, `this node sent no migration ${uid} (or no longer keeps its figures)`);
      json(res, report, noStore);
    },
    stats: async (res) => {
      json(res, { vmis: await options.stats() }, noStore);
    },
    domainAction: async (res, { params: { namespace, name, action: subresource }, word }) => {
      const action = domainActionOf(subresource);
      if (!action) throw new ConsoleRefusal(404, `no such action: ${word}`);
      const target = lookup(namespace, name);
      const refusal = actionUnavailable(target.vmi, action);
      if (refusal) throw refusal;
      const domain = await options.act(target, action).catch((error: unknown) => {
        throw new ConsoleRefusal(409, `the launcher could not ${word} the VMI: ${failure(error)}`);
      });
      log.info("domain action", { namespace, vmi: name, action });
      json(res, domain);
    },
    fileSystems: async (res, { params: { namespace, name, action }, query: { unfreezeTimeoutSeconds } }) => {
      const target = lookup(namespace, name);
      const refusal = guestAgentRefusal(target.vmi);
      if (refusal) throw new ConsoleRefusal(409, refusal);
      const domain = await options.freeze(target, action, unfreezeTimeoutSeconds).catch((error: unknown) => {
        throw new ConsoleRefusal(409, `the guest agent could not ${action} the file systems: ${failure(error)}`);
      });
      log.info("file systems", { namespace, vmi: name, action, unfreezeTimeoutSeconds });
      json(res, domain);
    },
    guestAgent: async (res, { params: { namespace, name, query } }) => {
      const target = lookup(namespace, name);
      const refusal = guestAgentRefusal(target.vmi);
      if (refusal) throw new ConsoleRefusal(409, refusal);
      const info = await options.guestAgentInfo(target).catch((error: unknown) => {
        throw new ConsoleRefusal(409, `the guest agent did not answer: ${failure(error)}`);
      });
      json(res, guestAgentAnswer(info, query));
    },
    screenshot: async (res, { params: { namespace, name } }) => {
      const target = lookup(namespace, name);
      const refusal = actionUnavailable(target.vmi, "vnc");
      if (refusal) throw refusal;
      const { bytes } = await options.screenshot(target).catch((error: unknown) => {
        throw new ConsoleRefusal(409, `the launcher could not take a screenshot: ${failure(error)}`);
      });
      if (bytes > SCREENSHOT_MAX_BYTES)
        throw new ConsoleRefusal(
          500,
          `the screenshot is ${String(bytes)} bytes, more than the ${String(SCREENSHOT_MAX_BYTES)} served`,
        );
      const png = await readPodFileTail(podsDir, target.podUid, SocketsVolume.screenshot, bytes);
      res.writeHead(200, { "content-type": "image/png", ...noStore }).end(png);
    },
    serialLog: async (res, { params: { namespace, name } }) => {
      const { podUid } = lookup(namespace, name);
      const current = await readPodFileTail(podsDir, podUid, SERIAL_LOG_NAME, SERIAL_LOG_TAIL_BYTES);
      // virtlogd rotates the log into serial0.log.0: the older part comes from there.
      const missing = SERIAL_LOG_TAIL_BYTES - current.length;
      const older =
        missing > 0
          ? await readPodFileTail(podsDir, podUid, `${SERIAL_LOG_NAME}.0`, missing).catch((e: unknown) => {
              if ((e as NodeJS.ErrnoException).code === "ENOENT") return Buffer.alloc(0);
              throw e;
            })
          : Buffer.alloc(0);
      res
        .writeHead(200, { "content-type": "application/octet-stream", ...noStore })
        .end(Buffer.concat([older, current]));
    },
  };

  const serveHttp = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      if (!authorized(req)) throw new ConsoleRefusal(403, "this client may not use the console server");
      const request = route(req, false);
      await (
        requests[request.route as HandlerRequestRoute] as (
          res: ServerResponse,
          request: HandlerRouteMatch,
        ) => Promise<void> | void
      )(res, request);
    } catch (error) {
      const status =
        error instanceof ConsoleRefusal ? error.status : (error as NodeJS.ErrnoException).code === "ENOENT" ? 404 : 500;
      if (status === 500) log.error("could not answer a request", { url: req.url, error });
      const message =
        status === 404 && !(error instanceof ConsoleRefusal)
          ? "the VMI has no serial log yet"
          : (error as Error).message;
      res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(`${message}\n`);
    }
  };

  /**
   * Joins a websocket to a socket of the launcher pod; `key` names the one session a console may have, none for a port
   * forward.
   */
  const bridge = (
    ws: WebSocket,
    unix: Socket,
    key: string | undefined,
    labels: { namespace: string; vmi: string },
    kind: StreamKind,
  ) => {
    if (key !== undefined) {
      sessions.get(key)?.close(1000, "a newer session took over this console");
      sessions.set(key, ws);
    }
    active[kind].inc(labels);
    keepAlive(ws, pingIntervalMs);
    endOnError(ws);
    pipeToViewer(unix, ws);
    ws.on("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
      writeToGuest(unix, ws, Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer));
    });
    unix.on("close", () => {
      if (ws.readyState === ws.OPEN)
        ws.close(
          1000,
          kind === "portforward"
            ? "the guest closed the connection"
            : `the VM's ${kind === "vnc" ? "display" : "console"} closed`,
        );
    });
    unix.on("error", (error) => {
      log.warn("console socket error", { ...labels, kind, error });
    });
    ws.on("close", () => {
      unix.destroy();
      if (key !== undefined && sessions.get(key) === ws) sessions.delete(key);
      active[kind].dec(labels);
      log.info("console session ended", { ...labels, kind });
    });
    log.info("console session started", { ...labels, kind });
  };

  /**
   * Closes the session that holds a console, if any, and waits until it has let go; one that does not answer the close
   * handshake in 2 s is cut off.
   */
  const letGo = async (key: string, reason: string): Promise<void> => {
    const previous = sessions.get(key);
    if (!previous) return;
    const closed = once(previous, "close");
    previous.close(1000, reason);
    const timer = setTimeout(() => {
      previous.terminate();
    }, 2_000);
    await closed.finally(() => {
      clearTimeout(timer);
    });
  };

  /**
   * The shared serial consoles and displays, by VMI and kind; made on the first viewer (one at a time, so two first
   * viewers share one).
   */
  const shared = new Map<string, Promise<SharedSession>>();
  const sharedSession = <S extends SharedSession>(key: string, make: (ended: () => void) => Promise<S>): Promise<S> => {
    const current = shared.get(key) as Promise<S> | undefined;
    if (current) return current;
    const group = (async () => {
      // A session that does not share lets go of QEMU's socket first.
      await letGo(key, "a shared session took over this console");
      const made: S = await make(() => {
        void shared.get(key)?.then((now) => {
          if (now === made) shared.delete(key);
        });
      });
      return made;
    })();
    shared.set(key, group);
    group.catch(() => {
      shared.delete(key);
    });
    return group;
  };

  /** Connects to a socket in the launcher pod's volume, opened by handle (pod-volume.ts). */
  const connectPodSocket = async (podUid: string, socketName: string): Promise<Socket> => {
    const target = await openPodSocket(podsDir, podUid, socketName);
    try {
      const unix = connect(target.path);
      await once(unix, "connect");
      // An error on a pod's socket ends its session (its close follows), never the handler, whoever listens to it.
      unix.on("error", (error) => {
        log.warn("launcher pod socket error", { podUid, socket: socketName, error });
      });
      return unix;
    } finally {
      await target.close();
    }
  };

  /** A console or display: one session that takes over from the last, or (shared) one viewer more of a shared one. */
  const openConsole = async (
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    what: ConsoleKind,
    { namespace, name }: { namespace: string; name: string },
    query: { shared: boolean; viewer: string | undefined; preserveSession?: boolean },
  ) => {
    const { vmi, podUid } = lookup(namespace, name);
    const refusal = actionUnavailable(vmi, what);
    if (refusal) throw refusal;
    const key = `${vmi.metadata.uid ?? ""}/${what}`;
    if (query.shared) {
      const labels = { namespace, vmi: name };
      const who = (query.viewer ?? "") || "someone";
      let join: (ws: WebSocket) => SharedSession;
      if (what === "console") {
        const group = await sharedSession(
          key,
          async (ended) => new SharedConsole(await connectPodSocket(podUid, SocketName.Serial), ended),
        );
        join = (ws) => {
          group.join(ws, who);
          return group;
        };
      } else {
        const group = await sharedSession(key, (ended) => Promise.resolve(new SharedDisplay(ended)));
        // QEMU's VNC server takes many clients: each viewer has its own connection.
        const unix = await connectPodSocket(podUid, SocketName.Vnc);
        join = (ws) => {
          group.join(ws, who, unix);
          return group;
        };
      }
      websockets.handleUpgrade(req, socket, head, (ws) => {
        active[what].inc(labels);
        keepAlive(ws, pingIntervalMs);
        endOnError(ws);
        ws.on("close", () => {
          active[what].dec(labels);
        });
        const group = join(ws);
        log.info("shared session viewer joined", { ...labels, kind: what, viewers: group.size });
      });
      return;
    }
    // A session that does not share takes over from every viewer of a shared one, as a new KubeVirt session does.
    const group = await shared.get(key);
    if (group) {
      shared.delete(key);
      group.close("a newer session took over this console");
    }
    if (query.preserveSession === true && sessions.has(key)) {
      throw new ConsoleRefusal(503, "another VNC session is open and preserveSession was asked for");
    }
    // The previous session lets go of QEMU's socket first: it takes one client at a time.
    await letGo(key, "a newer session took over this console");
    const unix = await connectPodSocket(podUid, what === "vnc" ? SocketName.Vnc : SocketName.Serial);
    websockets.handleUpgrade(req, socket, head, (ws) => {
      bridge(ws, unix, key, { namespace, vmi: name }, what);
    });
  };

  /** Each websocket route of the table, as a small function. */
  const streams: {
    [R in HandlerStreamRoute]: (
      req: IncomingMessage,
      socket: Duplex,
      head: Buffer,
      request: Matched<R>,
    ) => Promise<void>;
  } = {
    console: (req, socket, head, { params, query }) => openConsole(req, socket, head, "console", params, query),
    vnc: (req, socket, head, { params, query }) => openConsole(req, socket, head, "vnc", params, query),
    /**
     * A tunnel to a port of the guest: the launcher opens its socket for that port, and the websocket is joined to it.
     */
    portForward: async (req, socket, head, { params: { namespace, name, port, protocol } }) => {
      const forward = parsePortForward(port, protocol);
      if (typeof forward === "string") throw new ConsoleRefusal(400, forward);
      const target = lookup(namespace, name);
      const refusal = actionUnavailable(target.vmi, "portforward");
      if (refusal) throw refusal;
      await options.portForward(target, forward).catch((error: unknown) => {
        throw new ConsoleRefusal(409, `the launcher could not forward port ${String(forward.port)}: ${failure(error)}`);
      });
      const unix = await connectPodSocket(target.podUid, portForwardSocket(forward));
      websockets.handleUpgrade(req, socket, head, (ws) => {
        bridge(ws, unix, undefined, { namespace, vmi: name }, "portforward");
      });
    },
  };

  const upgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      if (!authorized(req)) throw new ConsoleRefusal(403, "this client may not use the console server");
      const request = route(req, true);
      await (
        streams[request.route as HandlerStreamRoute] as (
          req: IncomingMessage,
          socket: Duplex,
          head: Buffer,
          request: HandlerRouteMatch,
        ) => Promise<void>
      )(req, socket, head, request);
    } catch (error) {
      if (!(error instanceof ConsoleRefusal)) log.error("could not open a console", { url: req.url, error });
      refuseUpgrade(socket, error);
    }
  };

  const server: Server = createServer(
    { ...options.tls, requestCert: true, rejectUnauthorized: true, minVersion: "TLSv1.3" },
    (req, res) => void serveHttp(req, res),
  );
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => void upgrade(req, socket, head));
  server.listen(options.port, options.host);
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  log.info("console server listening", { port, allowedClients: options.allowedClients });
  return {
    port,
    close: async () => {
      for (const ws of sessions.values()) ws.close(1001, "the handler is stopping");
      websockets.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
