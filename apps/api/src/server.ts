import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { Duplex } from "node:stream";
import { createServer as createTlsServer } from "node:https";
import type { TLSSocket } from "node:tls";
import type { Logger } from "@kubevirt-ts/runtime";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { type UpgradeHandler, bearerToken, consoleTarget, createConsoleProxy } from "./console-proxy.ts";
import type { ApiServices } from "./trpc/init.ts";
import { appRouter } from "./trpc/router.ts";
import { limits } from "./limits.ts";
import { readBody } from "./read-body.ts";
import { createTrpcGate } from "./trpc-gate.ts";
import { kubeStatus } from "./subresources/api.ts";
import { type KubeClient, tokenReviews } from "@kubevirt-ts/kube";
import {
  type ClusterConfig,
  DEFAULTING_OPTIONS,
  type DefaultingOptions,
  SERVER_KEEP_ALIVE_MS,
  defaultClusterConfig,
} from "@kubevirt-ts/kubevirt-api";
import { type WebhookCaller, reviewEviction } from "./eviction-webhook.ts";
import { type ClientTrust, clientCertRefusal } from "./client-cert.ts";
import { reviewMigration } from "./migration-webhook.ts";
import {
  type AdmissionReview,
  type WebhookKind,
  asStoredVersion,
  inferVmDefaults,
  mutate,
  validate,
  validateKubeVirtReview,
  vmValidationContext,
} from "./webhooks.ts";

// The API's listeners: tRPC and the console websockets on one HTTP port
// (the dashboard's server proxies both), and on a TLS port of their own,
// which the Kubernetes API server calls, the admission webhooks and KubeVirt's
// subresource API (subresources/). What each reads is bounded (limits.ts)
// before anything is parsed or authenticated.

/** Node's own bounds on every request: its headers and how long it may take to arrive. */
/**
 * A server's bounds: headers within 10 s (and the request's timeout), idle connections kept past their clients'.
 * requestTimeout 0: none.
 */
const bounded = (requestTimeout: number) => ({
  maxHeaderSize: limits.headerBytes,
  requestTimeout,
  headersTimeout: requestTimeout === 0 ? 10_000 : Math.min(requestTimeout, 10_000),
  keepAliveTimeout: SERVER_KEEP_ALIVE_MS,
});

/** Where a subscription's token must not be: the URL, which proxies and browsers log and keep. */
const TOKEN_IN_URL =
  "Send the bearer token in the Authorization header: a token in the URL (connectionParams) " +
  "is refused, since URLs end up in logs and history.";

/** The procedures of appRouter that take no token (router.ts builds them from publicProcedure). */
const PUBLIC_PROCEDURES: ReadonlySet<string> = new Set(["health"]);
const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { type: string } } | undefined>;

export function createApiServer(services: ApiServices): Server {
  const trpc = createHTTPHandler({
    router: appRouter,
    basePath: "/trpc/",
    maxBodySize: limits.trpcBodyBytes,
    maxBatchSize: limits.trpcBatchSize,
    createContext: ({ req }) => ({ ...services, token: bearerToken(req) }),
    onError: ({ error, path }) => {
      if (error.code === "INTERNAL_SERVER_ERROR")
        services.log.error("procedure failed", { path, error: error.cause ?? error });
    },
  });
  // Batch size, a token the API server accepts, a place in flight and room for the body, before a body is read
  // (trpc-gate.ts).
  const gate = createTrpcGate({
    publicProcedures: PUBLIC_PROCEDURES,
    isSubscription: (name) => procedures[name]?._def.type === "subscription",
    authenticate: tokenReviews(() => Promise.resolve(services.own)),
  });
  const consoles = createConsoleProxy({ own: services.own, handlers: services.handlers, log: services.log });
  const server = createServer(bounded(limits.requestTimeoutMs), (req, res) => {
    if (req.url?.startsWith("/trpc/")) {
      if (new URL(req.url, "http://api").searchParams.has("connectionParams")) {
        res.writeHead(400, { "content-type": "text/plain; charset=utf-8" }).end(`${TOKEN_IN_URL}\n`);
        return;
      }
      gate(req, res).then(
        (admitted) => {
          if (admitted) trpc(req, res);
        },
        (error: unknown) => {
          services.log.error("tRPC gate failed", { error });
          res.destroy();
        },
      );
      return;
    }
    res
      .writeHead(404, { "content-type": "text/plain; charset=utf-8" })
      .end("not found: the API serves /trpc/ and KubeVirt's console and VNC subresources\n");
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!consoles(req, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
  });
  return server;
}

interface WebhookOptions {
  own: KubeClient;
  /**
   * The cluster's configuration now (the KubeVirt CR's over the chart's values): eviction strategy, machine type, CPU
   * model.
   */
  cluster: ClusterConfig;
  /** The release namespace, where the one KubeVirt CR kubevirt-ts reads is. */
  installNamespace: string;
  /** Whether the review came over the API server's verified client certificate (a side effect may depend on it). */
  caller: WebhookCaller;
}

type Review = (review: AdmissionReview, options: WebhookOptions) => Promise<AdmissionReview> | AdmissionReview;

/**
 * A VM's validation looks up its instancetype and preference with the API's own account, as KubeVirt's virt-api does.
 */
const validateWithContext =
  (kind: WebhookKind): Review =>
  async (review, { own }) =>
    validate(
      review,
      kind,
      kind === "virtualmachines"
        ? await vmValidationContext(review.request?.object, (r, ns, name) => own.find(r, ns, name))
        : undefined,
    );

const WEBHOOKS: Record<string, Review> = {
  "/validate-virtualmachines": validateWithContext("virtualmachines"),
  // inferFromVolume reads the volume's claim or DataVolume with the API's own account, as KubeVirt's virt-api does.
  "/mutate-virtualmachines": async (review, { own, cluster }) =>
    mutate(
      review,
      "virtualmachines",
      await inferVmDefaults(review.request?.object, (r, ns, name) => own.find(r, ns, name)),
      defaultingOf(cluster),
    ),
  "/validate-virtualmachineinstances": validateWithContext("virtualmachineinstances"),
  "/mutate-virtualmachineinstances": (review, { cluster }) =>
    mutate(review, "virtualmachineinstances", undefined, defaultingOf(cluster)),
  "/validate-datavolumes": (review) => validate(review, "datavolumes"),
  "/validate-migrationpolicies": (review) => validate(review, "migrationpolicies"),
  "/validate-virtualmachineinstancemigrations": (review, { own }) => reviewMigration(review, own),
  "/validate-pod-eviction": (review, { own, cluster, caller }) =>
    reviewEviction(review, own, cluster.evictionStrategy, caller),
  "/validate-kubevirts": (review, { installNamespace }) => validateKubeVirtReview(review, installNamespace),
};

/** KubeVirt's defaulting with the cluster's machine type and CPU model. */
const defaultingOf = (cluster: ClusterConfig): DefaultingOptions => ({
  ...DEFAULTING_OPTIONS,
  machineType: cluster.machineType,
  cpuModel: cluster.cpuModel,
});

const WEBHOOK_CALLER_NAMES = {
  whose: "the API server's webhook client",
  ca: "webhooks.clientCA",
  namesFrom: "webhooks.clientNames",
};

/**
 * Who calls the webhooks: anyone (no `callers`), or the API server by its client certificate; a refusal's code and
 * message.
 */
function webhookCaller(
  req: IncomingMessage,
  callers: ClientTrust | undefined,
): WebhookCaller | { code: 401 | 403; message: string } {
  if (!callers) return "unverified";
  const peer = (req.socket as TLSSocket).getPeerX509Certificate();
  const refused = clientCertRefusal(callers, WEBHOOK_CALLER_NAMES, peer);
  if (refused === undefined) return "verified";
  return {
    code: peer ? 403 : 401,
    message:
      `${refused}: the admission webhooks answer only the Kubernetes API server (its ` +
      "admission configuration's client certificate)",
  };
}

/**
 * The TLS listener the Kubernetes API server calls: the admission webhooks, and KubeVirt's subresource API when it
 * is given (the API server presents its front proxy's client certificate there; it is asked for, never required):
 * its PUT actions, and its console and VNC websockets as upgrades (`consoles`). Any other upgrade gets a 404.
 * With `callers` (the chart's webhooks.clientCA), a webhook request without the API server's client certificate is
 * refused (401, 403) before its body is read; without, every caller is answered, and unverified (eviction-webhook.ts).
 */
export function createWebhookServer(
  tls: { cert: Buffer; key: Buffer },
  own: KubeClient,
  log: Logger,
  subresources?: (req: IncomingMessage, res: ServerResponse) => boolean,
  consoles?: UpgradeHandler,
  cluster: () => ClusterConfig = () => defaultClusterConfig(),
  callers?: ClientTrust,
  installNamespace = "kubevirt-ts",
): Server {
  const server = createTlsServer(
    { ...tls, requestCert: true, rejectUnauthorized: false, ...bounded(limits.webhookRequestTimeoutMs) },
    (req: IncomingMessage, res: ServerResponse) => {
      const websocket = consoles ? consoleTarget(req.url) : undefined;
      if (websocket) {
        // A console without the upgrade: say how to ask for it, as KubeVirt's virt-api refuses a plain request there.
        const message =
          `virtualmachineinstances/${websocket.kind} is a websocket: ask for it with GET and ` +
          `Upgrade: websocket (virtctl ${websocket.kind} does)`;
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(kubeStatus(400, message)));
        return;
      }
      if (subresources?.(req, res)) return;
      const review = WEBHOOKS[new URL(req.url ?? "/", "https://api").pathname];
      if (!review || req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      const caller = webhookCaller(req, callers);
      if (typeof caller === "object") {
        res.writeHead(caller.code, { "content-type": "text/plain", connection: "close" }).end(`${caller.message}\n`);
        return;
      }
      void readBody(req, limits.webhookBodyBytes).then(
        async (body) => {
          if (!body) {
            res
              .writeHead(413, { "content-type": "text/plain", connection: "close" })
              .end(`an AdmissionReview is at most ${String(limits.webhookBodyBytes)} bytes\n`);
            return;
          }
          try {
            const answer = await review(asStoredVersion(JSON.parse(body.toString("utf8")) as AdmissionReview), {
              own,
              cluster: cluster(),
              installNamespace,
              caller,
            });
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
          } catch (error) {
            log.error("could not review an admission request", { url: req.url, error });
            res
              .writeHead(400, { "content-type": "text/plain" })
              .end(error instanceof Error ? error.message : String(error));
          }
        },
        (error: unknown) => {
          log.warn("an admission request broke off", { url: req.url, error });
          res.destroy();
        },
      );
    },
  );
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!consoles?.(req, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
  });
  return server;
}

/**
 * The upload proxy's listener (upload/proxy.ts): plain HTTP behind the dashboard's gateway, as the API's own port, but
 * with no bound on how long a request takes, since an image takes as long as it takes; its headers are bounded still.
 */
export function createUploadProxyServer(proxy: (req: IncomingMessage, res: ServerResponse) => void): Server {
  return createServer(bounded(0), proxy);
}
