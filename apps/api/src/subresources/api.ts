import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { ApiError, type KubeClient } from "@kubevirt-ts/kube";
import {
  DOMAIN_ACTION_SUBRESOURCE, SUBRESOURCE_GROUP, type VirtualMachine, type VirtualMachineInstance, type VmRequestAction, type VmRequestOptions, type VmiDomainAction,
  domainActionOf, kubevirtResources, planVmRequest, vmiRequestRefusal,
} from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { mayUser } from "../access.ts";
import { type HandlerDialer, HandlerError } from "../handler-dialer.ts";
import { limits } from "../limits.ts";
import { readBody } from "../read-body.ts";
import { type FrontProxy, type RemoteUser, frontProxyRefusal, remoteUser } from "./front-proxy.ts";

// KubeVirt's subresource API, subresources.kubevirt.io v1 and v1alpha3, as
// an aggregated API server behind the Kubernetes API server (the chart's
// APIService): what virtctl and every KubeVirt client call for VM actions.
// The API server authenticates the user and passes them on; virt-api checks
// the front proxy's certificate, asks the API server whether that user may
// use this subresource of this object (a SubjectAccessReview), and only then
// makes the one write the action needs with its own account (ADR 6).

export const SUBRESOURCE_VERSIONS = ["v1", "v1alpha3"] as const;
const PREFIX = `/apis/${SUBRESOURCE_GROUP}/`;

/** What the API server's discovery lists for each version: the subresources served here. */
export const SUBRESOURCE_NAMES = [
  "virtualmachines/start",
  "virtualmachines/stop",
  "virtualmachines/restart",
  ...Object.values(DOMAIN_ACTION_SUBRESOURCE).map((s) => `virtualmachineinstances/${s}`),
] as const;

export interface SubresourceServices {
  own: KubeClient;
  handlers: HandlerDialer;
  frontProxy: FrontProxy;
  log: Logger;
  version: string;
}

interface Target {
  version: string;
  namespace: string;
  resource: "virtualmachines" | "virtualmachineinstances";
  name: string;
  subresource: string;
}

class Refusal extends Error {
  readonly code: number;
  readonly details: { name: string; kind: string } | undefined;
  constructor(code: number, message: string, details?: { name: string; kind: string }) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

const REASONS: Record<number, string> = { 400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 413: "RequestEntityTooLarge", 500: "InternalError" };

/** A Kubernetes Status, as KubeVirt's virt-api answers a refused request. */
function sendStatus(res: ServerResponse, code: number, message: string, details?: { name: string; kind: string }): void {
  const body = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason: REASONS[code] ?? "Unknown", ...(details ? { details: { ...details, group: "kubevirt.io" } } : {}), code };
  res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
}

const sendJson = (res: ServerResponse, code: number, body: unknown) => res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));

/** Conflict in KubeVirt's words: "Operation cannot be fulfilled on virtualmachine.kubevirt.io "<name>": <why>". */
const conflict = (kind: "virtualmachine" | "virtualmachineinstance", name: string, why: string, code = 409) =>
  new Refusal(code, code === 409 ? `Operation cannot be fulfilled on ${kind}.kubevirt.io "${name}": ${why}` : why, { name, kind });

function parseTarget(path: string): Target | "discovery" | "version" | "healthz" | undefined {
  const parts = path.slice(PREFIX.length).split("/");
  const [version, ...rest] = parts;
  if (!version || !(SUBRESOURCE_VERSIONS as readonly string[]).includes(version)) return undefined;
  if (rest.length === 0 || (rest.length === 1 && rest[0] === "")) return "discovery";
  if (rest.length === 1 && (rest[0] === "version" || rest[0] === "healthz")) return rest[0];
  const [namespaces, namespace, resource, name, ...sub] = rest;
  if (namespaces !== "namespaces" || !namespace || !name || sub.length === 0) return undefined;
  if (resource !== "virtualmachines" && resource !== "virtualmachineinstances") return undefined;
  return { version, namespace: decodeURIComponent(namespace), resource, name: decodeURIComponent(name), subresource: sub.join("/") };
}

async function authorize(own: KubeClient, who: RemoteUser, verb: string, target: Target): Promise<void> {
  const check = { verb, group: SUBRESOURCE_GROUP, version: target.version, resource: target.resource, subresource: target.subresource };
  const answer = await mayUser(own, who, target.namespace, check, target.name);
  if (!answer.allowed) {
    const kind = target.resource === "virtualmachines" ? "virtualmachine" : "virtualmachineinstance";
    throw new Refusal(403, `${kind}.kubevirt.io "${target.name}" is forbidden: User "${who.user}" cannot ${verb} resource "${target.resource}/${target.subresource}" in API group "${SUBRESOURCE_GROUP}" in the namespace "${target.namespace}"${answer.reason ? `: ${answer.reason}` : ""}`);
  }
}

async function options(req: IncomingMessage): Promise<VmRequestOptions & { dryRun?: string[] }> {
  const body = await readBody(req, limits.subresourceBodyBytes);
  if (body === undefined) throw new Refusal(413, `a request body is at most ${String(limits.subresourceBodyBytes)} bytes`);
  const text = body.toString("utf8").trim();
  if (text === "") return {};
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const number = (key: string) => (typeof parsed[key] === "number" ? parsed[key] : undefined);
    const dryRun = Array.isArray(parsed.dryRun) ? parsed.dryRun.filter((v): v is string => typeof v === "string") : undefined;
    return { paused: parsed.paused === true, gracePeriod: number("gracePeriod"), gracePeriodSeconds: number("gracePeriodSeconds"), ...(dryRun ? { dryRun } : {}) };
  } catch (error) {
    throw new Refusal(400, `Can not unmarshal Request body to struct, error: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** start, stop or restart: the plan of kubevirt-api's planVmRequest, written with the API's own account. */
async function vmRequest(services: SubresourceServices, target: Target, action: VmRequestAction, req: IncomingMessage): Promise<void> {
  const { own } = services;
  const opts = await options(req);
  const vm = await own.find<VirtualMachine>(kubevirtResources.virtualMachines, target.namespace, target.name);
  if (!vm) throw new Refusal(404, `virtualmachine.kubevirt.io "${target.name}" not found`, { name: target.name, kind: "virtualmachine" });
  const vmi = await own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, target.namespace, target.name);
  const owned = vmi?.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === vm.metadata.uid) ? vmi : undefined;
  const plan = planVmRequest(vm, owned, action, opts);
  if (plan.kind === "refuse") throw conflict("virtualmachine", target.name, plan.message, plan.code);
  if (opts.dryRun?.includes("All")) return;
  try {
    if (plan.vmiGrace && owned) await own.patch(kubevirtResources.virtualMachineInstances, target.namespace, target.name, plan.vmiGrace, "json");
    if (plan.spec) await own.patch(kubevirtResources.virtualMachines, target.namespace, target.name, plan.spec, "json");
    if (plan.status) await own.patch(kubevirtResources.virtualMachines, target.namespace, target.name, plan.status, "json", "status");
  } catch (error) {
    // A test that no longer holds: the VM changed between reading and writing.
    if (error instanceof ApiError && (error.code === 409 || error.code === 422)) throw conflict("virtualmachine", target.name, error.status.message ?? "the VM changed meanwhile; try again");
    throw error;
  }
}

/** pause, unpause, soft reboot or reset: checked as KubeVirt does, then asked of the handler on the VMI's node. */
async function vmiRequest(services: SubresourceServices, target: Target, action: VmiDomainAction, req: IncomingMessage): Promise<void> {
  const opts = await options(req);
  const vmi = await services.own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, target.namespace, target.name);
  if (!vmi) throw new Refusal(404, `virtualmachineinstance.kubevirt.io "${target.name}" not found`, { name: target.name, kind: "virtualmachineinstance" });
  const refusal = vmiRequestRefusal(vmi, action);
  if (refusal) throw conflict("virtualmachineinstance", target.name, refusal.message, refusal.code);
  if (opts.dryRun?.includes("All")) return;
  const node = vmi.status?.nodeName;
  if (!node) throw new Refusal(400, `Unable to connect to VirtualMachineInstance because phase is ${vmi.status?.phase ?? "Pending"} instead of Running or Scheduled`);
  try {
    await services.handlers.act(node, target.namespace, target.name, action);
  } catch (error) {
    if (error instanceof HandlerError) throw new Refusal(error.status === 409 ? 409 : 500, error.status === 409 ? error.message : `Internal error occurred: ${error.message}`);
    throw error;
  }
}

/** Serves a request under /apis/subresources.kubevirt.io/; false when the path is not one. */
export function createSubresourceApi(services: SubresourceServices): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { frontProxy, log } = services;
  const resourceList = (version: string) => ({
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${SUBRESOURCE_GROUP}/${version}`,
    // Each is called with PUT (update), as KubeVirt's; its discovery names them the same way.
    resources: SUBRESOURCE_NAMES.map((name) => ({ name, singularName: "", namespaced: true, kind: "", verbs: ["update"] })),
  });

  async function serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const target = parseTarget(path);
    if (target === undefined) throw new Refusal(404, `the subresource API serves ${SUBRESOURCE_NAMES.join(", ")}; ${path} is none of them`);
    // Discovery, version and health are public, as KubeVirt's: the API server's availability check reads them.
    if (typeof target === "string") {
      const answers = {
        discovery: () => resourceList(path.slice(PREFIX.length).split("/")[0] ?? "v1"),
        version: () => ({ gitVersion: services.version, gitCommit: "", gitTreeState: "", buildDate: "", goVersion: "", compiler: "", platform: `${process.platform}/${process.arch}` }),
        healthz: () => ({ apiserver: { connectivity: "ok" } }),
      };
      sendJson(res, 200, answers[target]());
      return;
    }

    const config = await frontProxy.config();
    const refused = frontProxyRefusal(config, (req.socket as TLSSocket).getPeerX509Certificate());
    if (refused) throw new Refusal(401, refused);
    const who = remoteUser(config, req.headersDistinct);
    if (typeof who === "string") throw new Refusal(401, who);

    const vmAction = target.resource === "virtualmachines" && ["start", "stop", "restart"].includes(target.subresource) ? (target.subresource as VmRequestAction) : undefined;
    const vmiAction = target.resource === "virtualmachineinstances" ? domainActionOf(target.subresource) : undefined;
    if (!vmAction && !vmiAction) throw new Refusal(404, `${target.resource}/${target.subresource} is not served here; the subresource API serves ${SUBRESOURCE_NAMES.join(", ")}`);
    if (req.method !== "PUT") throw new Refusal(405, `${target.resource}/${target.subresource} takes PUT, not ${req.method ?? ""}`);
    await authorize(services.own, who, "update", target);
    if (vmAction) {
      await vmRequest(services, target, vmAction, req);
      res.writeHead(202).end();
    } else if (vmiAction) {
      await vmiRequest(services, target, vmiAction, req);
      res.writeHead(200).end();
    }
    log.info("subresource request done", { user: who.user, namespace: target.namespace, resource: target.resource, name: target.name, subresource: target.subresource });
  }

  return (req, res) => {
    const path = new URL(req.url ?? "/", "https://api").pathname;
    if (!path.startsWith(PREFIX)) return false;
    serve(req, res, path).catch((error: unknown) => {
      if (error instanceof Refusal) {
        sendStatus(res, error.code, error.message, error.details);
        return;
      }
      if (error instanceof ApiError) {
        sendStatus(res, error.code, error.status.message ?? `the API server answered ${String(error.code)}`);
        return;
      }
      log.error("a subresource request failed", { path, error });
      sendStatus(res, 500, `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`);
    });
    return true;
  };
}
