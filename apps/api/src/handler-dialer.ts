import { request } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { type KubeClient, type Pod, resources } from "@kubevirt-ts/kube";
import {
  ConsoleServer,
  type HandlerAnswer,
  type HandlerRequestRoute,
  type HandlerRouteParams,
  type HandlerRouteQueryInput,
  type HandlerRouteResult,
  HandlerRouteRefusal,
  type HandlerStreamRoute,
  handlerAnswerMaxBytes,
  handlerPath,
  handlerRoutes,
  readHandlerAnswer,
} from "@kubevirt-ts/node-contract";
import {
  DOMAIN_ACTION_SUBRESOURCE,
  type FreezeAction,
  type GuestAgentQuery,
  type VmiDomainAction,
} from "@kubevirt-ts/kubevirt-api";
import type { MigrationReport } from "@kubevirt-ts/launcher-protocol";
import { StatusError } from "@kubevirt-ts/runtime";
import { type ClientOptions, WebSocket } from "ws";
import { limits } from "./limits.ts";

// The API's way to the handler of a node: the handler pod on that node, its
// console server reached over mutual TLS with the API's client certificate,
// and the handler's certificate checked to name the handler. Every path comes
// from the handler's route table (node-contract's handlerRoutes), and every
// answer is held to the route's bounds and schema.

export interface HandlerTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** What a handler's stats route answers: the launchers' domain stats of the VMIs on its node. */
export type NodeStats = HandlerRouteResult<"stats">;

/** A websocket the handler opens: its route, params and query. */
export type HandlerStream = {
  [R in HandlerStreamRoute]: { route: R; params: HandlerRouteParams<R>; query?: HandlerRouteQueryInput<R> };
}[HandlerStreamRoute];

/** What the handler answered, or why it could not be reached (5xx). */
export class HandlerError extends StatusError {}

export class HandlerDialer {
  private readonly own: KubeClient;
  private readonly namespace: string;
  private readonly port: number;
  private readonly tls: HandlerTls;

  constructor(options: { own: KubeClient; namespace: string; port: number; tls: HandlerTls }) {
    this.own = options.own;
    this.namespace = options.namespace;
    this.port = options.port;
    this.tls = options.tls;
  }

  private options(): ClientOptions & ConnectionOptions {
    return {
      ca: this.tls.ca,
      cert: this.tls.cert,
      key: this.tls.key,
      servername: ConsoleServer.handlerIdentity,
      perMessageDeflate: false,
      maxPayload: limits.handlerFrameBytes,
    };
  }

  /** The ready handlers, on one node or on all. */
  private async readyHandlers(nodeName?: string): Promise<Pod[]> {
    const pods = await this.own.list<Pod>(resources.pods, this.namespace, {
      labelSelector: "app.kubernetes.io/name=virt-handler",
      ...(nodeName ? { fieldSelector: `spec.nodeName=${nodeName}` } : {}),
    });
    return pods.items.filter(
      (p) =>
        !p.metadata.deletionTimestamp &&
        p.status?.podIP &&
        p.spec?.nodeName &&
        p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
  }

  /** Where the ready handler on a node listens. */
  private async address(nodeName: string): Promise<{ host: string; port: number }> {
    const ready = (await this.readyHandlers(nodeName))[0];
    if (!ready?.status?.podIP)
      throw new HandlerError(
        503,
        `no ready handler runs on node ${nodeName}; the VM's console and actions are unavailable until it is back`,
      );
    return { host: ready.status.podIP, port: this.port };
  }

  /**
   * The domain stats of the VMIs on every node, one answer per ready handler (found with one list), each asked at its
   * own address; a handler that does not answer gives none, and `failed` hears why.
   */
  async statsOfEveryNode(failed: (node: string, error: unknown) => void): Promise<NodeStats[]> {
    const handlers = await this.readyHandlers();
    return Promise.all(
      handlers.map(async (pod) => {
        const node = pod.spec?.nodeName ?? "";
        try {
          return await this.requestAt({ host: pod.status?.podIP ?? "", port: this.port }, node, "stats", {});
        } catch (error) {
          failed(node, error);
          return { vmis: [] };
        }
      }),
    );
  }

  /**
   * Opens a console or VNC session, or a port forward, with the handler; resolves once it is open, paused: what the
   * handler sends at once (QEMU's VNC server speaks first) waits until the caller has its listener on and calls
   * resume().
   */
  async open(nodeName: string, stream: HandlerStream): Promise<WebSocket> {
    const { host, port } = await this.address(nodeName);
    const path = (
      handlerPath as (
        route: HandlerStreamRoute,
        params: HandlerStream["params"],
        query: HandlerStream["query"],
      ) => string
    )(stream.route, stream.params, stream.query);
    const ws = new WebSocket(`wss://${host}:${String(port)}${path}`, this.options());
    return new Promise((resolve, reject) => {
      ws.once("open", () => {
        ws.pause();
        resolve(ws);
      });
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (body += c))
          .on("end", () => {
            reject(
              new HandlerError(res.statusCode ?? 502, body.trim() || `the handler answered ${String(res.statusCode)}`),
            );
          });
      });
      ws.once("error", (error) => {
        reject(new HandlerError(502, `could not reach the handler on node ${nodeName}: ${error.message}`));
      });
    });
  }

  /** Asks the handler to carry out an action on the VMI's domain. */
  async act(nodeName: string, namespace: string, name: string, action: VmiDomainAction): Promise<void> {
    await this.request(nodeName, "domainAction", { namespace, name, action: DOMAIN_ACTION_SUBRESOURCE[action] });
  }

  /** What the VMI's guest agent tells, in KubeVirt's shape of the query asked. */
  async guestAgent(nodeName: string, namespace: string, name: string, query: GuestAgentQuery): Promise<unknown> {
    return this.request(nodeName, "guestAgent", { namespace, name, query });
  }

  /** Freezes (thawing by itself after the timeout, 0: never) or thaws the guest's file systems. */
  async freeze(
    nodeName: string,
    namespace: string,
    name: string,
    action: FreezeAction,
    unfreezeTimeoutSeconds: number,
  ): Promise<void> {
    await this.request(
      nodeName,
      "fileSystems",
      { namespace, name, action },
      action === "freeze" ? { unfreezeTimeoutSeconds } : undefined,
    );
  }

  /**
   * What the handler of the node a migration left from last read of it (its progress, and once it ended its real
   * downtime); undefined when that handler answers it sent none by that uid (404), as after it restarted.
   */
  async migrationReport(nodeName: string, migrationUid: string): Promise<MigrationReport | undefined> {
    return this.request(nodeName, "migration", { uid: migrationUid }).catch((error: unknown) => {
      if (error instanceof HandlerError && error.status === 404) return undefined;
      throw error;
    });
  }

  /** The VMI's display, as PNG. */
  async screenshot(nodeName: string, namespace: string, name: string): Promise<Buffer> {
    return this.request(nodeName, "screenshot", { namespace, name });
  }

  /** What the VMI's guest printed on its serial console since boot: the last 512 KiB the handler keeps. */
  async serialLog(nodeName: string, namespace: string, name: string): Promise<Buffer> {
    return this.request(nodeName, "serialLog", { namespace, name });
  }

  /**
   * One request of a route to the handler on a node: its answer when it answers 200, else a HandlerError with its
   * status and words.
   */
  private async request<R extends HandlerRequestRoute>(
    nodeName: string,
    route: R,
    params: HandlerRouteParams<R>,
    query?: HandlerRouteQueryInput<R>,
  ): Promise<HandlerAnswer<R>> {
    return this.requestAt(await this.address(nodeName), nodeName, route, params, query);
  }

  /** One request of a route to a handler found already; an answer past the route's bounds is a HandlerError (502). */
  private requestAt<R extends HandlerRequestRoute>(
    { host, port }: { host: string; port: number },
    nodeName: string,
    route: R,
    params: HandlerRouteParams<R>,
    query?: HandlerRouteQueryInput<R>,
  ): Promise<HandlerAnswer<R>> {
    const maxBytes = handlerAnswerMaxBytes(route);
    return new Promise<HandlerAnswer<R>>((resolve, reject) => {
      const { ca, cert, key, servername } = this.options();
      const req = request(
        {
          ca,
          cert,
          key,
          servername,
          method: handlerRoutes[route].method,
          host,
          port,
          path: handlerPath(route, params, query),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let bytes = 0;
          res
            .on("data", (c: Buffer) => {
              bytes += c.length;
              if (bytes <= maxBytes) {
                chunks.push(c);
                return;
              }
              reject(
                new HandlerError(
                  502,
                  `the handler on node ${nodeName} answered ${route} with more than ${String(maxBytes)} bytes`,
                ),
              );
              req.destroy();
            })
            .on("end", () => {
              const body = Buffer.concat(chunks);
              if (res.statusCode !== 200) {
                reject(new HandlerError(res.statusCode ?? 502, body.toString("utf8").trim()));
                return;
              }
              try {
                resolve(readHandlerAnswer(route, params, body));
              } catch (error) {
                reject(
                  error instanceof HandlerRouteRefusal
                    ? new HandlerError(error.status, `${error.message} (node ${nodeName})`)
                    : (error as Error),
                );
              }
            });
        },
      );
      req.on("error", (error) => {
        reject(new HandlerError(502, `could not reach the handler on node ${nodeName}: ${error.message}`));
      });
      req.end();
    });
  }
}
