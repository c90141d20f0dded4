import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, type KubeClient, isNotFound } from "@kubevirt-ts/kube";
import { ACTION_WORDS, type ConsoleKind, SUBRESOURCE_GROUP, type VirtualMachineInstance, kubevirtResources, vmiActionAvailability } from "@kubevirt-ts/kubevirt-api";
import { type Logger, StatusError, keepAlive } from "@kubevirt-ts/runtime";
import { type WebSocket, WebSocketServer } from "ws";
import { type HandlerDialer, HandlerError } from "./handler-dialer.ts";
import { mayI } from "./access.ts";
import { limits } from "./limits.ts";

// KubeVirt's console and VNC subresources as websockets: the path and the
// plain.kubevirt.io subprotocol of virtctl, binary frames of raw bytes, the
// bearer token in the Authorization header or, from a browser that cannot
// set headers, as a base64url.bearer.authorization.k8s.io.<token>
// subprotocol. The user must be allowed `get` on the subresource; the bytes
// then flow to the handler on the VMI's node over mutual TLS.
//
// A browser cannot read the HTTP status of a refused upgrade, so refusals
// come after the upgrade, as close codes with a reason in words:
// 4401 not signed in, 4403 not allowed, 4404 no such VMI, 4409 not running
// (availableActions), 4400 the VMI has no such device (its spec),
// 4503 the node's handler is unreachable; 1009 a frame, or what came before
// the session was connected, past its bound (limits.ts).

export const CONSOLE_PATH = /^\/apis\/subresources\.kubevirt\.io\/v1\/namespaces\/([a-z0-9-]+)\/virtualmachineinstances\/([a-z0-9-]+)\/(console|vnc)$/;
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

/** A refused session, with its websocket close code. */
class Refusal extends StatusError {}

export interface ConsoleProxyOptions {
  own: KubeClient;
  handlers: HandlerDialer;
  log: Logger;
  pingIntervalMs?: number;
}

export function createConsoleProxy(options: ConsoleProxyOptions) {
  const { own, handlers, log } = options;
  const pingIntervalMs = options.pingIntervalMs ?? 30_000;
  const server = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: limits.consoleFrameBytes,
    // Answer with plain.kubevirt.io, never echoing the token back.
    handleProtocols: (protocols) => (protocols.has(PLAIN_PROTOCOL) ? PLAIN_PROTOCOL : false),
  });

  async function connect(token: string | undefined, namespace: string, name: string, kind: ConsoleKind): Promise<WebSocket> {
    if (!token) throw new Refusal(4401, "Sign in first: no bearer token came with the request.");
    const client = own.withBearerToken(token);
    let allowed: boolean;
    try {
      allowed = await mayI(client, namespace, { verb: "get", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: kind }, name);
    } catch (error) {
      if (error instanceof ApiError && error.code === 401) throw new Refusal(4401, "Your token was not accepted by the cluster: sign in again.");
      throw error;
    }
    if (!allowed) throw new Refusal(4403, `You may not open the ${kind === "vnc" ? "VNC display" : "serial console"} of ${namespace}/${name}: it takes get on virtualmachineinstances/${kind} (${SUBRESOURCE_GROUP}).`);
    let vmi: VirtualMachineInstance;
    try {
      vmi = await client.get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, name);
    } catch (error) {
      if (isNotFound(error)) throw new Refusal(4404, `The VM ${name} is not running (it has no VMI in ${namespace}); start it first.`);
      throw error;
    }
    const availability = vmiActionAvailability(vmi, kind);
    if (!availability.available) throw new Refusal(availability.by === "spec" ? 4400 : 4409, `Cannot ${ACTION_WORDS[kind]} ${name}: ${availability.reason}.`);
    if (!vmi.status?.nodeName) throw new Refusal(4409, `Cannot ${ACTION_WORDS[kind]} ${name}: its VMI has no node yet.`);
    try {
      return await handlers.open(vmi.status.nodeName, namespace, name, kind);
    } catch (error) {
      if (error instanceof HandlerError) throw new Refusal(error.status >= 500 ? 4503 : 4000 + error.status, error.message);
      throw error;
    }
  }

  function pipe(client: WebSocket, handler: WebSocket, labels: Record<string, string>): void {
    client.on("message", (data: Buffer) => { handler.send(data, { binary: true }); });
    handler.on("message", (data: Buffer) => { client.send(data, { binary: true }); });
    keepAlive(client, pingIntervalMs);
    const reason = (buffer: Buffer) => buffer.toString().slice(0, 120);
    handler.on("close", (code, why) => {
      if (client.readyState === client.OPEN) client.close(code === 1005 || code === 1006 ? 1000 : code, reason(why) || "the VM's console closed");
    });
    client.on("close", () => {
      handler.close();
      log.info("console session ended", labels);
    });
    handler.on("error", (error) => { log.warn("handler console error", { ...labels, error }); });
  }

  /** Takes an upgrade request; false when its path is not a console's. */
  return function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const match = CONSOLE_PATH.exec(new URL(req.url ?? "/", "http://api").pathname);
    if (!match) return false;
    const [, namespace = "", name = ""] = match;
    const kind = match[3] as ConsoleKind;
    const token = upgradeToken(req);
    server.handleUpgrade(req, socket, head, (client) => {
      const labels = { namespace, vmi: name, kind };
      // From the first byte: a frame past its bound is an error of this socket (ws closes it with 1009), never of the process.
      client.on("error", (error) => { log.warn("client console error", { ...labels, error }); });
      // What the browser sends before the handler answers waits here, bounded.
      const early: Buffer[] = [];
      let earlyBytes = 0;
      const hold = (data: Buffer) => {
        earlyBytes += data.length;
        if (earlyBytes <= limits.consoleEarlyBytes) early.push(data);
        else if (client.readyState === client.OPEN) client.close(1009, `At most ${String(limits.consoleEarlyBytes)} bytes before the console is connected.`);
      };
      client.on("message", hold);
      connect(token, namespace, name, kind).then(
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
          const refusal = error instanceof Refusal ? error : new Refusal(1011, "The console could not be opened; the API logged why.");
          if (!(error instanceof Refusal)) log.error("could not open a console", { ...labels, error });
          client.close(refusal.status, refusal.message.slice(0, 120));
        },
      );
    });
    return true;
  };
}
