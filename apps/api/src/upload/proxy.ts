import { type IncomingMessage, type ServerResponse, request } from "node:http";
import { type KubeClient, type PersistentVolumeClaim, type Pod, podReady, resources } from "@kubevirt-ts/kube";
import {
  CLAIM_POD_PHASE,
  CLAIM_UPLOAD_TARGET,
  UPLOAD_SERVER_PORT,
  UploadPath,
  uploadPodName,
} from "@kubevirt-ts/node-contract";
import { type DataVolume, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { type Logger, StatusError, deriveUploadKey } from "@kubevirt-ts/runtime";
import { bearerToken } from "../console-proxy.ts";
import type { UploadTokens } from "./token.ts";

// The upload proxy, CDI's cdi-uploadproxy role, in virt-api: virtctl
// image-upload and the dashboard's Images page send an image here with an
// upload token (token.ts); the proxy takes the token, finds the claim's upload
// pod (the importer serving its upload server) and streams the image to it
// with that pod's own key, then passes its answer back. The key is derived
// from the chart's upload master key and the uid of the DataVolume that
// controls the claim (deriveUploadKey), as the controller derived it for the
// pod's Secret: virt-api reads no Secret. The body is never held here: it
// flows through as it comes, for as long as it takes.

export interface UploadProxyServices {
  own: KubeClient;
  tokens: UploadTokens;
  /** The chart's upload master key (UPLOAD_MASTER_KEY_FILE). */
  uploadMasterKey: Uint8Array;
  log: Logger;
}

const PATHS: readonly string[] = [UploadPath.sync, UploadPath.async];

/** Whether a path is one the upload proxy serves. */
export const isUploadPath = (path: string): boolean => PATHS.includes(path) || path === "/healthz";

const answer = (res: ServerResponse, status: number, text: string) => {
  if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
  res.end(text === "" ? "" : `${text}\n`);
};

/** The upload pod of the token's claim, ready to take the image; or why not. */
async function uploadTarget(
  own: KubeClient,
  master: Uint8Array,
  namespace: string,
  pvcName: string,
): Promise<{ ip: string; key: string }> {
  const claim = await own.find<PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, pvcName);
  if (!claim)
    throw new StatusError(
      404,
      `no claim ${namespace}/${pvcName}: create a DataVolume with source upload first ` +
        `(virtctl image-upload dv ${pvcName} --size=... does)`,
    );
  const annotations = claim.metadata.annotations ?? {};
  if (!(CLAIM_UPLOAD_TARGET in annotations))
    throw new StatusError(
      400,
      `the claim ${namespace}/${pvcName} is not an upload target: upload to a DataVolume whose spec.source is upload`,
    );
  if (annotations[CLAIM_POD_PHASE] === "Succeeded")
    throw new StatusError(409, `the claim ${namespace}/${pvcName} already holds its uploaded disk`);
  const pod = await own.find<Pod>(resources.pods, namespace, uploadPodName(pvcName));
  if (!pod || !podReady(pod) || !pod.status?.podIP)
    throw new StatusError(
      503,
      `the upload server of ${namespace}/${pvcName} is not ready yet: wait for the DataVolume's phase UploadReady`,
    );
  const dv = await uploadDataVolume(own, namespace, pvcName, claim);
  return { ip: pod.status.podIP, key: deriveUploadKey(master, dv.metadata.uid ?? "") };
}

/**
 * The DataVolume of the claim's name, in its namespace, that controls the claim: the uid the upload pod's key is
 * derived from. The claim's owner reference alone is not trusted (a tenant with `edit` can name another namespace's
 * DataVolume's uid in a claim of their own, and have that DataVolume's key sent to a pod of theirs).
 */
async function uploadDataVolume(
  own: KubeClient,
  namespace: string,
  pvcName: string,
  claim: PersistentVolumeClaim,
): Promise<DataVolume> {
  const dv = await own.find<DataVolume>(kubevirtResources.dataVolumes, namespace, pvcName);
  if (!dv)
    throw new StatusError(
      404,
      `no DataVolume ${namespace}/${pvcName}: upload to the claim of a DataVolume whose spec.source is ` +
        `upload (virtctl image-upload dv ${pvcName} --size=... makes one)`,
    );
  const controller = claim.metadata.ownerReferences?.find((r) => r.controller === true);
  if (controller?.uid !== dv.metadata.uid)
    throw new StatusError(
      409,
      `the claim ${namespace}/${pvcName} is not controlled by the ` +
        `DataVolume ${namespace}/${pvcName}: delete the claim, and the DataVolume makes its own`,
    );
  return dv;
}

export function createUploadProxy(services: UploadProxyServices): (req: IncomingMessage, res: ServerResponse) => void {
  const { own, tokens, uploadMasterKey, log } = services;

  async function serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (path === "/healthz") {
      answer(res, 200, "ok");
      return;
    }
    const token = bearerToken(req);
    if (!token)
      throw new StatusError(
        401,
        "an upload needs its token in the Authorization header (Bearer): ask for one with an UploadTokenRequest",
      );
    const target = tokens.verify(token);
    if ("refused" in target) throw new StatusError(401, target.refused);
    // virtctl asks whether the async path is served before it uploads.
    if (req.method === "HEAD") {
      answer(res, 200, "");
      return;
    }
    if (req.method !== "POST") throw new StatusError(405, "an image is uploaded with POST");
    const pod = await uploadTarget(own, uploadMasterKey, target.namespace, target.pvcName);
    log.info("upload started", {
      namespace: target.namespace,
      pvcName: target.pvcName,
      bytes: req.headers["content-length"],
      path,
    });
    await new Promise<void>((resolve) => {
      const upstream = request(
        {
          host: pod.ip,
          port: UPLOAD_SERVER_PORT,
          path,
          method: "POST",
          headers: {
            authorization: `Bearer ${pod.key}`,
            "content-type": "application/octet-stream",
            ...(req.headers["content-length"]
              ? { "content-length": req.headers["content-length"] }
              : { "transfer-encoding": "chunked" }),
          },
        },
        (reply) => {
          res.writeHead(reply.statusCode ?? 502, {
            "content-type": reply.headers["content-type"] ?? "text/plain; charset=utf-8",
          });
          reply.pipe(res);
          reply.on("end", () => {
            log.info("upload ended", {
              namespace: target.namespace,
              pvcName: target.pvcName,
              status: reply.statusCode,
            });
            resolve();
          });
        },
      );
      upstream.on("error", (error) => {
        answer(res, 502, `the upload server of ${target.namespace}/${target.pvcName} broke off: ${error.message}`);
        resolve();
      });
      // A client that goes away cancels the upload: the upload server drops what it received.
      res.on("close", () => {
        if (!res.writableFinished) upstream.destroy();
      });
      req.pipe(upstream);
    });
  }

  return (req, res) => {
    const path = new URL(req.url ?? "/", "http://upload").pathname;
    if (!isUploadPath(path)) {
      answer(res, 404, `not found: the upload proxy takes images at ${PATHS.join(" and ")}`);
      return;
    }
    serve(req, res, path).catch((error: unknown) => {
      if (error instanceof StatusError) {
        answer(res, error.status, error.message);
        return;
      }
      log.error("an upload failed", { path, error });
      answer(res, 500, `the upload failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  };
}
