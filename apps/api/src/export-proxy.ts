import type { IncomingMessage, ServerResponse } from "node:http";
import { request } from "node:https";
import { setTimeout } from "node:timers/promises";
import { type KubeClient, type Service, resources } from "@kubevirt-ts/kube";
import { ExportPhase, type VirtualMachineExport, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import {
  EXPORT_PROXY_PREFIX,
  EXPORT_PROXY_ROOT,
  EXPORT_SERVICE_PORT,
  EXPORT_TOKEN_HEADER,
} from "@kubevirt-ts/node-contract";
import { type Logger, StatusError } from "@kubevirt-ts/runtime";

// The export proxy, KubeVirt's virt-exportproxy role, in virt-api behind the dashboard's address: an export's
// external link (https://<dashboard>/api/export.kubevirt.io/v1/namespaces/<ns>/virtualmachineexports/<name>/...) is
// passed to that export's server through its Service, verified with the certificate the export's status names. The
// proxy checks no token itself: the export server does, as KubeVirt's. It opens a connection only to the Service of a
// Ready export that the export controls, on port 443, and streams the answer with backpressure; a bounded number
// run at once.

export interface ExportProxyServices {
  own: KubeClient;
  log: Logger;
  /** Downloads passed at once; more are refused with 503. */
  maxStreams?: number;
}

export const DEFAULT_MAX_EXPORT_STREAMS = 32;
/**
 * Connection errors of a Service whose routes are still being programmed on this node (the export is Ready once its
 * EndpointSlice lists the pod; kube-proxy follows shortly after), and how often they are tried again.
 */
const NOT_ROUTED_YET = new Set(["ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ETIMEDOUT"]);
const CONNECT_TRIES = 20;
const CONNECT_RETRY_MS = 500;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$/;
/** The export versions whose paths the proxy takes (KubeVirt's proxy path names v1). */
const VERSIONS = ["v1", "v1beta1"];

/** Whether a path is one the export proxy serves. */
export const isExportProxyPath = (path: string): boolean => path.startsWith(EXPORT_PROXY_ROOT);

const answer = (res: ServerResponse, status: number, text: string) => {
  if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
  res.end(`${text}\n`);
};

/** The namespace, export name and the export server's path of an external link's path; or why it is not one. */
export function parseExportPath(path: string): { namespace: string; name: string; rest: string } {
  const match =
    /^\/api\/export\.kubevirt\.io\/([^/]+)\/namespaces\/([^/]+)\/virtualmachineexports\/([^/]+)(\/.*)$/.exec(path);
  const [, version, namespace, name, rest] = match ?? [];
  if (!version || !namespace || !name || !rest || !VERSIONS.includes(version))
    throw new StatusError(
      404,
      `not an export link: ${EXPORT_PROXY_PREFIX}<namespace>/virtualmachineexports/<name>/...`,
    );
  if (!DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(name))
    throw new StatusError(404, "not an export link: the namespace or the export's name is not a Kubernetes name");
  if (rest.includes("/../") || rest.endsWith("/..")) throw new StatusError(400, "an export link has no .. in its path");
  return { namespace, name, rest };
}

export function createExportProxy(services: ExportProxyServices): (req: IncomingMessage, res: ServerResponse) => void {
  const { own, log } = services;
  const maxStreams = services.maxStreams ?? DEFAULT_MAX_EXPORT_STREAMS;
  let streams = 0;

  /** The export's Service address and the certificate its server is verified with: a Ready export's own Service. */
  async function target(namespace: string, name: string): Promise<{ ip: string; host: string; cert: string }> {
    const exp = await own.find<VirtualMachineExport>(kubevirtResources.virtualMachineExports, namespace, name);
    if (!exp) throw new StatusError(404, `no VirtualMachineExport ${namespace}/${name}`);
    const cert = exp.status?.links?.internal?.cert;
    const serviceName = exp.status?.serviceName;
    if (exp.status?.phase !== ExportPhase.Ready || !cert || !serviceName)
      throw new StatusError(
        503,
        `the VirtualMachineExport ${namespace}/${name} is not ready (phase ${exp.status?.phase ?? "none"}): ` +
          "wait for its phase Ready",
      );
    const service = await own.find<Service>(resources.services, namespace, serviceName);
    const ours = service?.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === exp.metadata.uid);
    const ip = service?.spec?.clusterIP;
    if (!service || !ours || !ip || ip === "None")
      throw new StatusError(
        503,
        `the Service ${namespace}/${serviceName} of the export is missing or not the export's`,
      );
    return { ip, host: `${serviceName}.${namespace}.svc`, cert };
  }

  /**
   * Passes the request to the export server and its answer back; resolves once the answer ended (undefined), or with
   * the error when no answer came, so that the caller may try again.
   */
  function passOnce(
    req: IncomingMessage,
    res: ServerResponse,
    to: { ip: string; host: string; cert: string },
    path: string,
  ): Promise<Error | undefined> {
    return new Promise((resolve) => {
      const token = req.headers[EXPORT_TOKEN_HEADER];
      const upstream = request(
        {
          host: to.ip,
          port: EXPORT_SERVICE_PORT,
          servername: to.host,
          ca: to.cert,
          path,
          method: "GET",
          headers: {
            host: to.host,
            ...(typeof token === "string" ? { [EXPORT_TOKEN_HEADER]: token } : {}),
            ...(req.headers.accept ? { accept: req.headers.accept } : {}),
          },
        },
        (reply) => {
          const pass = ["content-type", "content-length", "content-disposition"] as const;
          res.writeHead(
            reply.statusCode ?? 502,
            Object.fromEntries(pass.flatMap((h) => (reply.headers[h] ? [[h, reply.headers[h]]] : []))),
          );
          reply.pipe(res);
          reply.on("end", () => {
            resolve(undefined);
          });
          reply.on("error", () => {
            res.destroy();
            resolve(undefined);
          });
        },
      );
      upstream.on("error", (error) => {
        if (!res.headersSent) {
          resolve(error);
          return;
        }
        res.destroy();
        resolve(undefined);
      });
      // A client that goes away ends its download at the export server too.
      res.on("close", () => {
        if (!res.writableFinished) upstream.destroy();
        resolve(undefined);
      });
      upstream.end();
    });
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://proxy");
    if (req.method !== "GET") throw new StatusError(405, "an export is read with GET");
    const { namespace, name, rest } = parseExportPath(url.pathname);
    if (streams >= maxStreams)
      throw new StatusError(503, `${String(maxStreams)} export downloads are passing: try again when one ends`);
    const to = await target(namespace, name);
    streams += 1;
    try {
      // A Service whose pod just became ready may not route yet: its first connections are tried again shortly.
      for (let attempt = 1; ; attempt += 1) {
        const failed = await passOnce(req, res, to, rest + url.search);
        if (failed === undefined || res.destroyed) return;
        const code = (failed as NodeJS.ErrnoException).code ?? "";
        if (!NOT_ROUTED_YET.has(code) || attempt >= CONNECT_TRIES) {
          answer(res, 502, `the export server of ${namespace}/${name} could not be reached: ${failed.message}`);
          return;
        }
        await setTimeout(CONNECT_RETRY_MS);
      }
    } finally {
      streams -= 1;
    }
  }

  return (req, res) => {
    serve(req, res).catch((error: unknown) => {
      if (error instanceof StatusError) {
        answer(res, error.status, error.message);
        return;
      }
      // The path only: the query may carry the export's token.
      log.error("an export download failed", {
        path: new URL(req.url ?? "/", "https://proxy").pathname,
        error: String(error),
      });
      answer(res, 500, "the export proxy failed: see virt-api's log");
    });
  };
}
