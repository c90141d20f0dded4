import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import { ApiError, type KubeClient } from "@kubevirt-ts/kube";
import { ACTION_WORDS, SHARED_CONSOLE_QUERY, vmiActionAvailability } from "@kubevirt-ts/vm-rules";
import {
  type PortForward,
  SUBRESOURCE_GROUP,
  type StreamKind,
  type VirtualMachineInstance,
  kubevirtResources,
  parsePortForward,
} from "@kubevirt-ts/kubevirt-api";
import {
  type Logger,
  type PipeBounds,
  SLOW_PEER_CLOSE_CODE,
  StatusError,
  endSession,
  keepAlive,
  sendWithBackpressure,
} from "@kubevirt-ts/runtime";
import { type WebSocket, WebSocketServer } from "ws";
import { type Check, mayI, remoteRequester, whoAmI } from "./access.ts";
import { type HandlerDialer, HandlerError, type HandlerStream } from "./handler-dialer.ts";
import { limits } from "./limits.ts";
import { SUBRESOURCE_VERSIONS, kubeStatus } from "./subresources/api.ts";
import { type FrontProxy, frontProxyRefusal, remoteUser } from "./subresources/front-proxy.ts";

// KubeVirt's console, VNC and portforward subresources as websockets: the
// path and the plain.kubevirt.io subprotocol of virtctl, binary frames of raw
// bytes. The user must be allowed `get` on the subresource; the bytes then
// flow to the handler on the VMI's node over mutual TLS. A VM's portforward
// reaches the VMI of the same name, as KubeVirt's does. Two callers share the session
// code here (connect, pipe), each with its own way to say who asks and how a
// refusal reads:
//
// - The dashboard's gateway, on the API's plain HTTP port: the bearer token
//   in the Authorization header or, from a browser that cannot set headers,
//   as a base64url.bearer.authorization.k8s.io.<token> subprotocol. A browser
//   cannot read the HTTP status of a refused upgrade, so refusals come after
//   the upgrade, as close codes with a reason in words: 4000 + the HTTP
//   status (4401 not signed in, 4403 not allowed, 4404 no such VMI, 4409 not
//   running (availableActions), 4400 the VMI has no such device (its spec),
//   4503 the node's handler is unreachable); 1009 a frame, or what came
//   before the session was connected, past its bound (limits.ts); 1013 a
//   side that stopped reading (limits.consolePipe).
// - The Kubernetes API server's aggregation layer, on the TLS listener (what
//   virtctl console and virtctl vnc reach): the front proxy's certificate and
//   X-Remote-* headers name the user, a SubjectAccessReview authorizes them
//   (ADR 6), and every refusal is an HTTP response with a Kubernetes Status
//   before the upgrade, as KubeVirt's virt-api answers, which the API server
//   passes back to the client.

const VMI_CONSOLE_SUBRESOURCE = "virtualmachineinstances/([a-z0-9.-]+)/(console|vnc|portforward)";
const VM_CONSOLE_SUBRESOURCE = "virtualmachines/([a-z0-9.-]+)/(portforward)";
export const CONSOLE_PATH = new RegExp(
  `^/apis/subresources\\.kubevirt\\.io/(${SUBRESOURCE_VERSIONS.join("|")})/namespaces/([a-z0-9-]+)/` +
    `(?:${VMI_CONSOLE_SUBRESOURCE}|${VM_CONSOLE_SUBRESOURCE})(?:/([^/]+)(?:/([^/]+))?)?$`,
);
const PLAIN_PROTOCOL = "plain.kubevirt.io";
const BEARER_PROTOCOL_PREFIX = "base64url.bearer.authorization.k8s.io.";

/** The token of an `Authorization: Bearer` header. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  return header?.startsWith("Bearer ") ? header.slice("Bearer ".length).trim() || undefined : undefined;
}

/** The bearer token of an upgrade request: its Authorization header, else its bearer subprotocol. */
export function upgradeToken(req: IncomingMessage): string | undefined {
  const fromHeader = bearerToken(req);
  if (fromHeader) return fromHeader;
  const protocols = (req.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim());
  const encoded = protocols.find((p) => p.startsWith(BEARER_PROTOCOL_PREFIX))?.slice(BEARER_PROTOCOL_PREFIX.length);
  return encoded ? Buffer.from(encoded, "base64url").toString("utf8") : undefined;
}

/**
 * A console or port forward request of one VMI: the version of the subresource API it came in, what it asks for,
 * the resource it came by (a VM's portforward reaches its VMI), and for a port forward the port, or why the path's
 * port or protocol cannot be had.
 */
export interface ConsoleTarget {
  version: string;
  namespace: string;
  name: string;
  resource: "virtualmachineinstances" | "virtualmachines";
  kind: StreamKind;
  forward?: PortForward | string;
  /** A serial console or VNC display shared with other viewers (console-sharing.ts) rather than taken over. */
  shared?: boolean;
}

/** The console request a path asks for, or undefined when the path is not a console's or a port forward's. */
export function consoleTarget(url: string | undefined): ConsoleTarget | undefined {
  const parsed = new URL(url ?? "/", "http://api");
  const match = CONSOLE_PATH.exec(parsed.pathname);
  if (!match) return undefined;
  const [, version = "", namespace = "", vmiName, vmiKind, vmName, , port, protocol] = match;
  const kind = (vmiKind ?? "portforward") as StreamKind;
  // Only a port forward has more to its path: the port, and the protocol.
  if ((kind === "portforward") !== (port !== undefined)) return undefined;
  const target: ConsoleTarget = {
    version,
    namespace,
    name: vmiName ?? vmName ?? "",
    resource: vmName === undefined ? "virtualmachineinstances" : "virtualmachines",
    kind,
  };
  if (kind !== "portforward" && parsed.searchParams.get(SHARED_CONSOLE_QUERY) === "true") target.shared = true;
  return port === undefined ? target : { ...target, forward: parsePortForward(port, protocol) };
}

/** What the handler is asked to open for a target; a Refusal (400) when its path's port or protocol cannot be had. */
function handlerStream(target: ConsoleTarget): HandlerStream {
  const params = { namespace: target.namespace, name: target.name };
  if (target.kind !== "portforward") return { route: target.kind, params };
  if (typeof target.forward !== "object")
    throw new Refusal(400, target.forward ?? "a port forward names its port: portforward/<port>[/<protocol>]");
  return {
    route: "portForward",
    params: { ...params, port: String(target.forward.port), protocol: target.forward.protocol },
  };
}

/** What a session is, in words: "open the serial console of", "forward port 22 of". */
function streamWords(target: ConsoleTarget): string {
  if (target.kind !== "portforward") return ACTION_WORDS[target.kind];
  return typeof target.forward === "object" ? `forward port ${String(target.forward.port)} of` : "forward a port of";
}

/** A refused session: its HTTP status (the token path closes with 4000 + it), and the object a Status names. */
class Refusal extends StatusError {
  readonly details: { name: string; kind: string } | undefined;
  constructor(status: number, message: string, details?: { name: string; kind: string }) {
    super(status, message);
    this.details = details;
  }
}

/** Who asks for a session, and how each refusal reads for them. */
interface Requester {
  /** Refuses (a Refusal) unless the user may open this session. */
  authorize(target: ConsoleTarget): Promise<void>;
  /** The VMI, read only once the user is authorized; a Refusal when there is none. */
  vmi(target: ConsoleTarget): Promise<VirtualMachineInstance>;
  /** The refusal when the VMI cannot give the session now: 409 its state, 400 its spec. */
  unavailable(target: ConsoleTarget, status: 400 | 409, reason: string): Refusal;
  /** Who they are, as the API server authenticated them: the name other viewers of a shared console see. */
  who(): Promise<string>;
}

/**
 * The permission a session takes: get on virtualmachineinstances/console, /vnc or /portforward (or
 * virtualmachines/portforward), as KubeVirt's roles grant it.
 */
const consoleCheck = (target: ConsoleTarget): Check => ({
  verb: "get",
  group: SUBRESOURCE_GROUP,
  version: target.version,
  resource: target.resource,
  subresource: target.kind,
});

export interface ConsoleProxyOptions {
  own: KubeClient;
  handlers: HandlerDialer;
  log: Logger;
  pingIntervalMs?: number;
  /** The bounds of each session's pipe; limits.consolePipe unless a test asks for others. */
  pipeBounds?: PipeBounds;
}

/** Takes an upgrade request; false when its path is not a console's. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/**
 * Joins a client's websocket to the handler's, both ways, with backpressure (limits.consolePipe): reading from one
 * side pauses while the other is behind, so that a client that stops reading holds virt-api to a few MiB and, past
 * the stall bound, ends its own session (close code 1013) rather than the process.
 */
export function pipeConsole(
  client: WebSocket,
  handler: WebSocket,
  options: { log: Logger; labels: Record<string, string>; pingIntervalMs: number; bounds: PipeBounds },
): void {
  const { log, labels, bounds } = options;
  const cutOff = (side: string) => (why: string) => {
    log.warn("console session cut off: a side fell behind", { ...labels, side, why });
    endSession(client, SLOW_PEER_CLOSE_CODE, `The ${side} ${why}: the session ended.`, bounds.closeGraceMs);
  };
  // Bytes are binary frames; a shared console's messages are text frames, passed on as they are.
  const toHandler = sendWithBackpressure(client, handler, bounds, cutOff("VM's console"));
  const toClient = sendWithBackpressure(handler, client, bounds, cutOff("console client"));
  client.on("message", (data: Buffer, binary: boolean) => {
    toHandler(data, binary);
  });
  handler.on("message", (data: Buffer, binary: boolean) => {
    toClient(data, binary);
  });
  // The handler's session was opened paused (HandlerDialer.open): nothing it sent is lost before this listener.
  handler.resume();
  keepAlive(client, options.pingIntervalMs);
  const reason = (buffer: Buffer) => buffer.toString().slice(0, 120);
  handler.on("close", (code, why) => {
    if (client.readyState === client.OPEN)
      client.close(code === 1005 || code === 1006 ? 1000 : code, reason(why) || "the VM's console closed");
  });
  client.on("close", () => {
    // A handler that stopped reading does not hold the session past the grace either.
    endSession(handler, 1000, "the console client left", bounds.closeGraceMs);
    log.info("console session ended", labels);
  });
  handler.on("error", (error) => {
    log.warn("handler console error", { ...labels, error });
  });
}

/** The session code both callers share: the websocket server, connecting to the handler, and piping the bytes. */
function consoleSessions(options: ConsoleProxyOptions) {
  const { handlers, log } = options;
  const pingIntervalMs = options.pingIntervalMs ?? 30_000;
  const server = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: limits.consoleFrameBytes,
    // Answer with plain.kubevirt.io when offered, never echoing a token back; a client that offers none gets none.
    handleProtocols: (protocols) => (protocols.has(PLAIN_PROTOCOL) ? PLAIN_PROTOCOL : false),
  });

  async function connect(requester: Requester, target: ConsoleTarget): Promise<WebSocket> {
    const stream = handlerStream(target);
    await requester.authorize(target);
    const vmi = await requester.vmi(target);
    const availability = vmiActionAvailability(vmi, target.kind);
    if (!availability.available)
      throw requester.unavailable(target, availability.by === "spec" ? 400 : 409, availability.reason);
    if (!vmi.status?.nodeName) throw requester.unavailable(target, 409, "its VMI has no node yet");
    try {
      const shared =
        target.shared === true && stream.route !== "portForward"
          ? { ...stream, query: { shared: true, viewer: await requester.who() } }
          : stream;
      return await handlers.open(vmi.status.nodeName, shared);
    } catch (error) {
      if (error instanceof HandlerError) throw new Refusal(error.status >= 500 ? 503 : error.status, error.message);
      throw error;
    }
  }

  const pipe = (client: WebSocket, handler: WebSocket, labels: Record<string, string>) => {
    pipeConsole(client, handler, { log, labels, pingIntervalMs, bounds: options.pipeBounds ?? limits.consolePipe });
  };

  return { server, connect, pipe, log };
}

/**
 * The dashboard gateway's consoles, on the API's plain HTTP port: the user's bearer token, and refusals after the
 * upgrade as close codes, since a browser cannot read a refused upgrade's status.
 */
export function createConsoleProxy(options: ConsoleProxyOptions): UpgradeHandler {
  const { server, connect, pipe, log } = consoleSessions(options);

  const tokenRequester = (token: string | undefined): Requester => {
    const client = token ? options.own.withBearerToken(token) : undefined;
    return {
      authorize: async (target) => {
        if (!client) throw new Refusal(401, "Sign in first: no bearer token came with the request.");
        let allowed: boolean;
        try {
          allowed = await mayI(client, target.namespace, consoleCheck(target), target.name);
        } catch (error) {
          if (error instanceof ApiError && error.code === 401)
            throw new Refusal(401, "Your token was not accepted by the cluster: sign in again.");
          throw error;
        }
        if (!allowed)
          throw new Refusal(
            403,
            `You may not ${streamWords(target)} ${target.namespace}/${target.name}: it takes get ` +
              `on ${target.resource}/${target.kind} (${SUBRESOURCE_GROUP}).`,
          );
      },
      vmi: async (target) => {
        const vmi = await client?.find<VirtualMachineInstance>(
          kubevirtResources.virtualMachineInstances,
          target.namespace,
          target.name,
        );
        if (!vmi)
          throw new Refusal(
            404,
            `The VM ${target.name} is not running (it has no VMI in ${target.namespace}); start it first.`,
          );
        return vmi;
      },
      unavailable: (target, status, reason) =>
        new Refusal(status, `Cannot ${streamWords(target)} ${target.name}: ${reason}.`),
      who: async () => (client ? (await whoAmI(client)).username : ""),
    };
  };

  return (req, socket, head) => {
    const target = consoleTarget(req.url);
    if (!target) return false;
    const requester = tokenRequester(upgradeToken(req));
    server.handleUpgrade(req, socket, head, (client) => {
      const labels = { namespace: target.namespace, vmi: target.name, kind: target.kind };
      // From the first byte: a frame past its bound is an error of this socket (ws closes it with 1009), never of the
      // process.
      client.on("error", (error) => {
        log.warn("client console error", { ...labels, error });
      });
      // What the browser sends before the handler answers waits here, bounded.
      const early: Buffer[] = [];
      let earlyBytes = 0;
      const hold = (data: Buffer) => {
        earlyBytes += data.length;
        if (earlyBytes <= limits.consoleEarlyBytes) early.push(data);
        else if (client.readyState === client.OPEN)
          client.close(1009, `At most ${String(limits.consoleEarlyBytes)} bytes before the console is connected.`);
      };
      client.on("message", hold);
      connect(requester, target).then(
        (handler) => {
          client.off("message", hold);
          if (client.readyState !== client.OPEN) {
            handler.close();
            return;
          }
          for (const data of early) handler.send(data, { binary: true });
          pipe(client, handler, labels);
          log.info("console session started", labels);
        },
        (error: unknown) => {
          if (!(error instanceof Refusal)) log.error("could not open a console", { ...labels, error });
          const [code, reason] =
            error instanceof Refusal
              ? [4000 + error.status, error.message]
              : [1011, "The console could not be opened; the API logged why."];
          client.close(code, reason.slice(0, 120));
        },
      );
    });
    return true;
  };
}

export interface SubresourceConsoleOptions extends ConsoleProxyOptions {
  frontProxy: FrontProxy;
}

/** Answers an upgrade request with a Kubernetes Status instead of the upgrade, and hangs up. */
function refuseUpgrade(socket: Duplex, code: number, message: string, details?: { name: string; kind: string }): void {
  const body = JSON.stringify(kubeStatus(code, message, details));
  socket.end(
    `HTTP/1.1 ${String(code)} ${STATUS_CODES[code] ?? "Error"}\r\nContent-Type: ` +
      `application/json\r\nContent-Length: ${String(Buffer.byteLength(body))}\r\nConnection: ` +
      `close\r\n\r\n${body}`,
  );
}

/**
 * KubeVirt's console and VNC subresources as the Kubernetes API server passes them on (virtctl console, virtctl
 * vnc), on the TLS listener of the subresource API: the front proxy's certificate checked, the user it names
 * authorized with a SubjectAccessReview, the VMI read with the API's own account only then, and the handler's
 * session opened before the upgrade is answered, so that every refusal is an HTTP status the client can read.
 */
export function createSubresourceConsoles(options: SubresourceConsoleOptions): UpgradeHandler {
  const { server, connect, pipe, log } = consoleSessions(options);
  const { own, frontProxy } = options;
  const details = (target: ConsoleTarget) => ({ name: target.name, kind: "virtualmachineinstance" });

  /**
   * The user the front proxy names, and how they are authorized; a Refusal (401) when no front proxy sent the request.
   */
  const requesterOf = async (req: IncomingMessage): Promise<{ user: string; requester: Requester }> => {
    const config = await frontProxy.config();
    const refused = frontProxyRefusal(config, (req.socket as TLSSocket).getPeerX509Certificate());
    if (refused) throw new Refusal(401, refused);
    const who = remoteUser(config, req.headersDistinct);
    if (typeof who === "string") throw new Refusal(401, who);
    const access = remoteRequester(own, who);
    const requester: Requester = {
      authorize: async (target) => {
        const check = consoleCheck(target);
        const answer = await access.may(target.namespace, check, target.name);
        if (!answer.allowed)
          throw new Refusal(403, access.refusal(target.namespace, check, target.name, answer.reason));
      },
      vmi: async (target) => {
        const vmi = await own.find<VirtualMachineInstance>(
          kubevirtResources.virtualMachineInstances,
          target.namespace,
          target.name,
        );
        if (!vmi)
          throw new Refusal(404, `virtualmachineinstance.kubevirt.io "${target.name}" not found`, details(target));
        return vmi;
      },
      // KubeVirt's words: a conflict names the object; a missing device is a bad request.
      unavailable: (target, status, reason) =>
        new Refusal(
          status,
          status === 409
            ? `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "${target.name}": ${reason}`
            : reason,
          details(target),
        ),
      who: () => Promise.resolve(who.user),
    };
    return { user: who.user, requester };
  };

  return (req, socket, head) => {
    const target = consoleTarget(req.url);
    if (!target) return false;
    const labels = { namespace: target.namespace, vmi: target.name, kind: target.kind };
    // Until ws takes the socket, its errors (a client gone while the session is set up) are this request's alone.
    const ignore = (error: Error) => {
      log.debug("a console client went away before its session was up", { ...labels, error });
    };
    socket.on("error", ignore);
    requesterOf(req)
      .then(async ({ user, requester }) => ({ user, handler: await connect(requester, target) }))
      .then(
        ({ user, handler }) => {
          if (socket.destroyed || !socket.writable) {
            handler.close();
            return;
          }
          socket.off("error", ignore);
          // ws answers the upgrade, or refuses a malformed one with 400, before it returns: a session it did not take
          // is closed.
          const upgraded = { taken: false };
          server.handleUpgrade(req, socket, head, (client) => {
            upgraded.taken = true;
            client.on("error", (error) => {
              log.warn("client console error", { ...labels, error });
            });
            pipe(client, handler, { ...labels, user });
            log.info("console session started", { ...labels, user });
          });
          if (!upgraded.taken) handler.close();
        },
        (error: unknown) => {
          if (error instanceof Refusal) {
            refuseUpgrade(socket, error.status, error.message, error.details);
          } else if (error instanceof ApiError) {
            refuseUpgrade(socket, error.code, error.status.message ?? `the API server answered ${String(error.code)}`);
          } else {
            log.error("could not open a console", { ...labels, error });
            refuseUpgrade(
              socket,
              500,
              `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`,
            );
          }
        },
      );
    return true;
  };
}
