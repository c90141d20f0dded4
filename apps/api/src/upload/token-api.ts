import type { IncomingMessage, ServerResponse } from "node:http";
import { type KubeClient, ApiError } from "@kubevirt-ts/kube";
import { UPLOAD_GROUP } from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { type Requester, remoteRequester } from "../access.ts";
import { limits } from "../limits.ts";
import { readBody } from "../read-body.ts";
import { ActionRefusal } from "../vm-actions.ts";
import { type FrontProxy, frontProxyUser } from "../subresources/front-proxy.ts";
import { sendJson, sendStatus } from "../subresources/api.ts";
import type { UploadTokens } from "./token.ts";

// CDI's UploadTokenRequest (upload.cdi.kubevirt.io/v1beta1), as an
// aggregated API served by virt-api where kubevirt-ts serves DataVolumes:
// virtctl image-upload creates one naming the claim it uploads to, and sends
// the token in its answer to the upload proxy. Only who may create
// uploadtokenrequests in the namespace gets one (a SubjectAccessReview), as
// CDI's roles grant it to the namespace's editors.

export const UPLOAD_VERSION = "v1beta1";
const PREFIX = `/apis/${UPLOAD_GROUP}/${UPLOAD_VERSION}`;
const RESOURCE = "uploadtokenrequests";

export interface UploadTokenRequest {
  apiVersion: string;
  kind: "UploadTokenRequest";
  metadata: { name?: string; namespace?: string; [key: string]: unknown };
  spec: { pvcName: string };
  status?: { token?: string };
}

/** Checks the requester may ask for an upload token in the namespace, then makes one for the claim. */
export async function issueUploadToken(
  tokens: UploadTokens,
  requester: Requester,
  namespace: string,
  pvcName: string,
): Promise<string> {
  const check = { verb: "create", group: UPLOAD_GROUP, resource: RESOURCE };
  const { allowed, reason } = await requester.may(namespace, check, "");
  if (!allowed) throw new ActionRefusal(403, requester.refusal(namespace, check, "", reason));
  return tokens.sign({ namespace, pvcName });
}

/** Serves a request under /apis/upload.cdi.kubevirt.io/v1beta1; false when the path is not one. */
export function createUploadTokenApi(services: {
  own: KubeClient;
  frontProxy: FrontProxy;
  tokens: UploadTokens;
  log: Logger;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { own, frontProxy, tokens, log } = services;

  async function serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const rest = path.slice(PREFIX.length);
    // Discovery is public, as every aggregated API's: the API server's availability check reads it.
    if (rest === "" || rest === "/") {
      sendJson(res, 200, {
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion: `${UPLOAD_GROUP}/${UPLOAD_VERSION}`,
        resources: [
          {
            name: RESOURCE,
            singularName: "uploadtokenrequest",
            namespaced: true,
            kind: "UploadTokenRequest",
            verbs: ["create"],
          },
        ],
      });
      return;
    }
    const match = /^\/namespaces\/([^/]+)\/uploadtokenrequests\/?$/.exec(rest);
    if (!match?.[1])
      throw new ActionRefusal(
        404,
        `${UPLOAD_GROUP}/${UPLOAD_VERSION} serves namespaced uploadtokenrequests only; ${path} is not one`,
      );
    if (req.method !== "POST")
      throw new ActionRefusal(405, `uploadtokenrequests are only created (POST), not ${req.method ?? ""}`);
    const who = await frontProxyUser(frontProxy, req);
    if ("refused" in who) throw new ActionRefusal(401, who.refused);
    const namespace = decodeURIComponent(match[1]);
    const body = await readBody(req, limits.subresourceBodyBytes);
    if (body === undefined)
      throw new ActionRefusal(413, `an UploadTokenRequest is at most ${String(limits.subresourceBodyBytes)} bytes`);
    let request: Partial<UploadTokenRequest>;
    try {
      request = JSON.parse(body.toString("utf8")) as UploadTokenRequest;
    } catch (error) {
      throw new ActionRefusal(
        400,
        `the body is not an UploadTokenRequest: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const pvcName = typeof request.spec?.pvcName === "string" ? request.spec.pvcName : "";
    if (pvcName === "")
      throw new ActionRefusal(400, "spec.pvcName is required: name the claim (the DataVolume) to upload to");
    const token = await issueUploadToken(tokens, remoteRequester(own, who), namespace, pvcName);
    log.info("upload token issued", { user: who.user, namespace, pvcName });
    sendJson(res, 201, {
      apiVersion: `${UPLOAD_GROUP}/${UPLOAD_VERSION}`,
      kind: "UploadTokenRequest",
      metadata: { ...(request.metadata ?? {}), namespace },
      spec: { pvcName },
      status: { token },
    });
  }

  return (req, res) => {
    const path = new URL(req.url ?? "/", "https://api").pathname;
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) return false;
    serve(req, res, path).catch((error: unknown) => {
      if (error instanceof ActionRefusal) {
        sendStatus(res, error.status, error.message);
        return;
      }
      if (error instanceof ApiError) {
        sendStatus(res, error.code, error.status.message ?? `the API server answered ${String(error.code)}`);
        return;
      }
      log.error("an upload token request failed", { path, error });
      sendStatus(res, 500, `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`);
    });
    return true;
  };
}
