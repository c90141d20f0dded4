import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { Duplex } from "node:stream";
import { createServer as createTlsServer } from "node:https";
import type { Logger } from "@kubevirt-ts/runtime";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { bearerToken, createConsoleProxy } from "./console-proxy.ts";
import type { ApiServices } from "./trpc/init.ts";
import { appRouter } from "./trpc/router.ts";
import { type AdmissionReview, type WebhookKind, mutate, validate } from "./webhooks.ts";

// The API's listeners: tRPC and the console websockets on one HTTP port
// (the dashboard's server proxies both), and the admission webhooks on a TLS
// port of their own, which only the API server calls.

export function createApiServer(services: ApiServices): Server {
  const trpc = createHTTPHandler({
    router: appRouter,
    basePath: "/trpc/",
    createContext: ({ req, info }) => {
      const params = info.connectionParams as { token?: unknown } | null;
      return { ...services, token: bearerToken(req) ?? (typeof params?.token === "string" ? params.token : undefined) };
    },
    onError: ({ error, path }) => {
      if (error.code === "INTERNAL_SERVER_ERROR") services.log.error("procedure failed", { path, error: error.cause ?? error });
    },
  });
  const consoles = createConsoleProxy({ own: services.own, handlers: services.handlers, log: services.log });
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/trpc/")) {
      trpc(req, res);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found: the API serves /trpc/ and KubeVirt's console and VNC subresources\n");
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!consoles(req, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
  });
  return server;
}

const WEBHOOKS: Record<string, { review: typeof validate; kind: WebhookKind }> = {
  "/validate-virtualmachines": { review: validate, kind: "virtualmachines" },
  "/mutate-virtualmachines": { review: mutate, kind: "virtualmachines" },
  "/validate-virtualmachineinstances": { review: validate, kind: "virtualmachineinstances" },
  "/mutate-virtualmachineinstances": { review: mutate, kind: "virtualmachineinstances" },
};

export function createWebhookServer(tls: { cert: Buffer; key: Buffer }, log: Logger): Server {
  return createTlsServer(tls, (req: IncomingMessage, res: ServerResponse) => {
    const hook = WEBHOOKS[new URL(req.url ?? "/", "https://api").pathname];
    if (!hook || req.method !== "POST") {
      res.writeHead(404).end();
      return;
    }
    let body = "";
    req.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => {
      try {
        const answer = hook.review(JSON.parse(body) as AdmissionReview, hook.kind);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      } catch (error) {
        log.error("could not review an admission request", { url: req.url, error });
        res.writeHead(400, { "content-type": "text/plain" }).end(error instanceof Error ? error.message : String(error));
      }
    });
  });
}
