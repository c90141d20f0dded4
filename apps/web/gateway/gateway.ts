// The dashboard's front door in its image: one port for the browser, which
// passes /trpc/ (queries, mutations, SSE subscriptions) and KubeVirt's
// console and VNC subresources (websockets) to virt-api, and everything else
// to the Next.js server. The browser thus talks to one origin, and the API
// is found at run time (the cluster has no DNS to rely on: the Service's
// address comes from the variables Kubernetes gives every pod).
import { type IncomingMessage, type ServerResponse, createServer, request } from "node:http";
import { connect } from "node:net";
import type { Duplex } from "node:stream";

export interface GatewayOptions {
  port: number;
  host: string;
  /** Where Next.js listens. */
  next: URL;
  /** Where virt-api listens. */
  api: URL;
}

const toApi = (path: string) => path.startsWith("/trpc/") || path.startsWith("/apis/subresources.kubevirt.io/");

function forward(req: IncomingMessage, res: ServerResponse, target: URL): void {
  const upstream = request(
    { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (error) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain; charset=utf-8" });
    res.end(`the dashboard could not reach ${target.host}: ${error.message}\n`);
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
}

function tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, target: URL): void {
  const upstream = connect(Number(target.port || 80), target.hostname, () => {
    const headers = Object.entries(req.headers).flatMap(([name, value]) => (Array.isArray(value) ? value.map((v) => `${name}: ${v}`) : value === undefined ? [] : [`${name}: ${value}`]));
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

export function startGateway(options: GatewayOptions) {
  const server = createServer((req, res) => {
    forward(req, res, toApi(req.url ?? "/") ? options.api : options.next);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    tunnel(req, socket, head, toApi(req.url ?? "/") ? options.api : options.next);
  });
  server.listen(options.port, options.host);
  return server;
}
