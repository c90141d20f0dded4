// The dashboard's front door in its image: one port for the browser, which
// passes /trpc/ (queries, mutations, SSE subscriptions) and KubeVirt's
// console and VNC subresources (websockets) to virt-api, and everything else
// to the Next.js server; CDI's upload paths go to virt-api's upload proxy. The browser thus talks to one origin, and
// the API is found at run time (the cluster has no DNS to rely on: the Service's
// address comes from the variables Kubernetes gives every pod).
//
// With a certificate it speaks HTTPS only: one port takes both, a TLS
// handshake goes to HTTPS and anything else to a plain server that sends
// browsers to https:// and refuses API calls, so no token is served in clear.
// Every response carries the security headers of security.ts; a page's
// script nonce is made here, per request, and handed to Next.js.
import { randomBytes } from "node:crypto";
import {
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
  createServer,
  request,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type Server as NetServer, type Socket, connect, createServer as createNetServer } from "node:net";
import type { Duplex } from "node:stream";
import { contentSecurityPolicy, securityHeaders } from "./security.ts";

export interface GatewayOptions {
  port: number;
  host: string;
  /** Where Next.js listens. */
  next: URL;
  /** Where virt-api listens. */
  api: URL;
  /** Where virt-api's upload proxy listens: CDI's upload paths go there, for as long as an upload takes. */
  upload?: URL | undefined;
  /** The certificate and key to serve HTTPS with; plain HTTP without. */
  tls?: { cert: Buffer; key: Buffer } | undefined;
}

export interface Gateway {
  /** The listening socket, HTTPS and HTTP on one port. */
  server: NetServer;
  /** Stops listening and ends every connection. */
  stop(): void;
}

const toApi = (path: string) => path.startsWith("/trpc/") || path.startsWith("/apis/subresources.kubevirt.io/");
/**
 * CDI's upload paths: the dashboard's address is the cluster's upload proxy URL too (virtctl image-upload
 * --uploadproxy-url), and the address of exports' external links (virtctl vmexport download).
 */
const toUpload = (path: string) =>
  // Exports' external links: virt-api's export proxy listens beside the upload proxy.
  path.startsWith("/api/export.kubevirt.io/") ||
  path === "/v1beta1/upload" ||
  path === "/v1beta1/upload-async" ||
  path.startsWith("/v1beta1/upload?") ||
  path.startsWith("/v1beta1/upload-async?");
/**
 * How long an idle kept-alive connection stays open: longer than clients keep theirs (Go's 90 s, browsers' 60 s and
 * more), so the client closes first. Node's default of 5 s raced clients' reuse ("socket hang up" under load). The
 * value of kubevirt-api's SERVER_KEEP_ALIVE_MS: the gateway runs as plain files beside Next's standalone server and
 * imports no workspace package.
 */
const KEEP_ALIVE_MS = 120_000;
/** How long any other request may take to arrive, as Node's own default bound. */
const REQUEST_TIMEOUT_MS = 300_000;

function forward(req: IncomingMessage, res: ServerResponse, target: URL): void {
  const nonce = randomBytes(16).toString("base64");
  const upstream = request(
    // Next.js takes its script nonce from this request header; whatever the client sent there is replaced.
    {
      host: target.hostname,
      port: target.port,
      path: req.url,
      method: req.method,
      headers: { ...req.headers, host: target.host, "content-security-policy": contentSecurityPolicy(nonce) },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, ...securityHeaders(nonce) });
      answer.pipe(res);
    },
  );
  upstream.on("error", (error) => {
    if (!res.headersSent)
      res.writeHead(502, { "content-type": "text/plain; charset=utf-8", ...securityHeaders(nonce) });
    res.end(`the dashboard could not reach ${target.host}: ${error.message}\n`);
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
}

function tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, target: URL): void {
  const upstream = connect(Number(target.port || 80), target.hostname, () => {
    const headers = Object.entries(req.headers).flatMap(([name, value]) =>
      Array.isArray(value) ? value.map((v) => `${name}: ${v}`) : value === undefined ? [] : [`${name}: ${value}`],
    );
    upstream.write(`${req.method ?? "GET"} ${req.url ?? "/"} HTTP/1.1\r\n${headers.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  const close = () => {
    upstream.destroy();
    socket.destroy();
  };
  upstream.on("error", close);
  socket.on("error", close);
  socket.on("close", close);
  upstream.on("close", close);
}

/** A request that came in clear: browsers are sent to https://, API calls refused. */
function refusePlain(req: IncomingMessage, res: ServerResponse): void {
  const host = req.headers.host ?? "";
  const headers = { ...securityHeaders(randomBytes(16).toString("base64")), connection: "close" };
  if ((req.method === "GET" || req.method === "HEAD") && /^[\w.:[\]-]+$/.test(host) && !toApi(req.url ?? "/")) {
    res.writeHead(308, { ...headers, location: `https://${host}${req.url ?? "/"}` }).end();
    return;
  }
  res
    .writeHead(400, { ...headers, "content-type": "text/plain; charset=utf-8" })
    .end(
      "The dashboard speaks HTTPS only: use https:// with this address. Whatever this request carried went in clear.\n",
    );
}

/** Hands each connection to `tls` when it opens with a TLS handshake, else to `plain`. */
function sniff(tls: Server, plain: Server): NetServer {
  return createNetServer((socket: Socket) => {
    socket.once("data", (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      (first[0] === 0x16 ? tls : plain).emit("connection", socket);
      process.nextTick(() => socket.resume());
    });
    socket.on("error", () => socket.destroy());
  });
}

export function startGateway(options: GatewayOptions): Gateway {
  const onRequest: RequestListener = (req, res) => {
    const url = req.url ?? "/";
    if (options.upload && toUpload(url)) {
      forward(req, res, options.upload);
      return;
    }
    // The servers take as long as an upload needs; every other request is held to Node's usual bound.
    const timer = setTimeout(() => {
      if (!req.complete) req.destroy();
    }, REQUEST_TIMEOUT_MS);
    req
      .once("end", () => {
        clearTimeout(timer);
      })
      .once("close", () => {
        clearTimeout(timer);
      });
    forward(req, res, toApi(url) ? options.api : options.next);
  };
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    tunnel(req, socket, head, toApi(req.url ?? "/") ? options.api : options.next);
  };
  if (!options.tls) {
    const server = createServer({ requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_MS }, onRequest).on(
      "upgrade",
      onUpgrade,
    );
    server.listen(options.port, options.host);
    return {
      server,
      stop: () => {
        server.closeAllConnections();
        server.close();
      },
    };
  }
  const secure = createHttpsServer(
    { ...options.tls, requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_MS },
    onRequest,
  ).on("upgrade", onUpgrade);
  const plain = createServer(refusePlain).on("upgrade", (_req: IncomingMessage, socket: Duplex) => {
    socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\nThe dashboard speaks HTTPS only: use wss://.\n");
  });
  const server = sniff(secure, plain);
  server.listen(options.port, options.host);
  return {
    server,
    stop: () => {
      server.close();
      for (const inner of [secure, plain]) inner.closeAllConnections();
    },
  };
}
