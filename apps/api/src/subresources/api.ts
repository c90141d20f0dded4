import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError, type KubeClient } from "@kubevirt-ts/kube";
import {
  DOMAIN_ACTION_SUBRESOURCE,
  FREEZE_ACTIONS,
  GUEST_AGENT_QUERIES,
  SUBRESOURCE_GROUP,
  domainActionOf,
  isFreezeAction,
  isGuestAgentQuery,
} from "@kubevirt-ts/kubevirt-api";
import { MIGRATION_SUBRESOURCE, type VmRequestAction, type VmRequestOptions } from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";
import { remoteRequester } from "../access.ts";
import type { HandlerDialer } from "../handler-dialer.ts";
import { limits } from "../limits.ts";
import { readBody } from "../read-body.ts";
import {
  ActionRefusal,
  type MigrateOptions,
  requestFreeze,
  requestGuestAgent,
  requestMigration,
  requestScreenshot,
  requestVmAction,
  requestVmiAction,
} from "../vm-actions.ts";
import { expandSentVm, expandStoredVm } from "./expand-spec.ts";
import { OBJECT_GRAPH_SUBRESOURCE, requestObjectGraph } from "./object-graph.ts";
import { type FrontProxy, frontProxyUser } from "./front-proxy.ts";

// KubeVirt's subresource API, subresources.kubevirt.io v1 and v1alpha3, as
// an aggregated API server behind the Kubernetes API server (the chart's
// APIService): what virtctl and every KubeVirt client call for VM actions,
// consoles and port forwards (console-proxy.ts) and what the guest agent tells.
// The API server authenticates the user and passes them on; virt-api checks
// the front proxy's certificate, asks the API server whether that user may
// use this subresource of this object (a SubjectAccessReview), and only then
// makes the one write the action needs with its own account (ADR 6).

export const SUBRESOURCE_VERSIONS = ["v1", "v1alpha3"] as const;
const PREFIX = `/apis/${SUBRESOURCE_GROUP}/`;

const READ_SUBRESOURCES = [
  "virtualmachineinstances/console",
  "virtualmachineinstances/vnc",
  "virtualmachineinstances/vnc/screenshot",
  "virtualmachineinstances/portforward",
  "virtualmachines/portforward",
  "virtualmachines/expand-spec",
  `virtualmachines/${OBJECT_GRAPH_SUBRESOURCE}`,
  `virtualmachineinstances/${OBJECT_GRAPH_SUBRESOURCE}`,
  ...GUEST_AGENT_QUERIES.map((q) => `virtualmachineinstances/${q}` as const),
] as const;

/**
 * KubeVirt's subresources kubevirt-ts refuses by name, with the reason: each needs a claim mounted into a launcher pod
 * that already runs (a hotplugged volume; a memory dump is written to one), and a pod's volumes are fixed when it is
 * made. Not listed in discovery, as they are not served.
 */
const HOTPLUG_REASON =
  "a running launcher pod cannot mount a new claim (a pod's volumes are fixed when it is made), and kubevirt-ts " +
  "has no hotplug pod to carry one";
const volumeRefusal = (command: string, instead: string) =>
  `kubevirt-ts does not build ${command} yet: ${HOTPLUG_REASON}. ${instead} the VM's spec and restart the VM instead`;
const MEMORY_DUMP_REFUSAL =
  `kubevirt-ts does not build memory-dump yet: the dump is written to a claim hotplugged into the running VM, ` +
  `and ${HOTPLUG_REASON}`;
export const REFUSED_SUBRESOURCES: Readonly<Record<string, string>> = {
  "virtualmachineinstances/addvolume": volumeRefusal("addvolume", "Add the volume to"),
  "virtualmachineinstances/removevolume": volumeRefusal("removevolume", "Remove the volume from"),
  "virtualmachines/addvolume": volumeRefusal("addvolume", "Add the volume to"),
  "virtualmachines/removevolume": volumeRefusal("removevolume", "Remove the volume from"),
  "virtualmachines/memorydump": MEMORY_DUMP_REFUSAL,
  "virtualmachines/removememorydump": MEMORY_DUMP_REFUSAL,
};

/** What the API server's discovery lists for each version: the subresources served here. */
export const SUBRESOURCE_NAMES = [
  "virtualmachines/start",
  "virtualmachines/stop",
  "virtualmachines/restart",
  `virtualmachines/${MIGRATION_SUBRESOURCE}`,
  ...Object.values(DOMAIN_ACTION_SUBRESOURCE).map((s) => `virtualmachineinstances/${s}`),
  ...FREEZE_ACTIONS.map((s) => `virtualmachineinstances/${s}` as const),
  // PUT with a VirtualMachine, answered with it expanded (expand-spec.ts).
  "expand-vm-spec",
  // Read with GET: the websockets (console-proxy.ts) and what the guest agent tells.
  ...READ_SUBRESOURCES,
] as const;

/** The verbs discovery gives a subresource: get for what is read, update (PUT) for the actions, as KubeVirt's. */
const discoveryVerbs = (name: string) =>
  (READ_SUBRESOURCES as readonly string[]).includes(name) ? ["get"] : ["update"];

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

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  413: "RequestEntityTooLarge",
  405: "MethodNotAllowed",
  500: "InternalError",
  503: "ServiceUnavailable",
};

/** A Kubernetes Status, as KubeVirt's virt-api answers a refused request (here and before a console's upgrade). */
export function kubeStatus(code: number, message: string, details?: { name: string; kind: string }) {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason: REASONS[code] ?? "Unknown",
    ...(details ? { details: { ...details, group: "kubevirt.io" } } : {}),
    code,
  };
}

export function sendStatus(
  res: ServerResponse,
  code: number,
  message: string,
  details?: { name: string; kind: string },
): void {
  res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(kubeStatus(code, message, details)));
}

export const sendJson = (res: ServerResponse, code: number, body: unknown) =>
  res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));

function parseTarget(
  path: string,
): Target | { expandVmSpec: string } | "discovery" | "version" | "healthz" | undefined {
  const parts = path.slice(PREFIX.length).split("/");
  const [version, ...rest] = parts;
  if (!version || !(SUBRESOURCE_VERSIONS as readonly string[]).includes(version)) return undefined;
  if (rest.length === 0 || (rest.length === 1 && rest[0] === "")) return "discovery";
  if (rest.length === 1 && (rest[0] === "version" || rest[0] === "healthz")) return rest[0];
  const [namespaces, namespace, resource, name, ...sub] = rest;
  if (namespaces === "namespaces" && namespace && resource === "expand-vm-spec" && name === undefined)
    return { expandVmSpec: decodeURIComponent(namespace) };
  if (namespaces !== "namespaces" || !namespace || !name || sub.length === 0) return undefined;
  if (resource !== "virtualmachines" && resource !== "virtualmachineinstances") return undefined;
  return {
    version,
    namespace: decodeURIComponent(namespace),
    resource,
    name: decodeURIComponent(name),
    subresource: sub.join("/"),
  };
}

/** A map of strings in a request body (addedNodeSelector), or a refusal naming the field. */
function stringMap(value: unknown, field: string): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value) || Object.values(value).some((v) => typeof v !== "string"))
    throw new ActionRefusal(
      400,
      `${field} must be a map of label names to values, e.g. {"kubernetes.io/hostname": "node-2"}`,
    );
  return value as Record<string, string>;
}

async function options(
  req: IncomingMessage,
): Promise<VmRequestOptions & MigrateOptions & { dryRun?: string[]; unfreezeTimeout?: string }> {
  const body = await readBody(req, limits.subresourceBodyBytes);
  if (body === undefined)
    throw new ActionRefusal(413, `a request body is at most ${String(limits.subresourceBodyBytes)} bytes`);
  const text = body.toString("utf8").trim();
  if (text === "") return {};
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const number = (key: string) => (typeof parsed[key] === "number" ? parsed[key] : undefined);
    const dryRun = Array.isArray(parsed.dryRun)
      ? parsed.dryRun.filter((v): v is string => typeof v === "string")
      : undefined;
    const unfreezeTimeout = typeof parsed.unfreezeTimeout === "string" ? parsed.unfreezeTimeout : undefined;
    const addedNodeSelector = stringMap(parsed.addedNodeSelector, "addedNodeSelector");
    return {
      paused: parsed.paused === true,
      gracePeriod: number("gracePeriod"),
      gracePeriodSeconds: number("gracePeriodSeconds"),
      ...(dryRun ? { dryRun } : {}),
      ...(unfreezeTimeout !== undefined ? { unfreezeTimeout } : {}),
      ...(addedNodeSelector ? { addedNodeSelector } : {}),
    };
  } catch (error) {
    if (error instanceof ActionRefusal) throw error;
    throw new ActionRefusal(
      400,
      `Can not unmarshal Request body to struct, error: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** Serves a request under /apis/subresources.kubevirt.io/; false when the path is not one. */
export function createSubresourceApi(
  services: SubresourceServices,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { frontProxy, log } = services;
  const resourceList = (version: string) => ({
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${SUBRESOURCE_GROUP}/${version}`,
    resources: SUBRESOURCE_NAMES.map((name) => ({
      name,
      singularName: "",
      namespaced: true,
      kind: "",
      verbs: discoveryVerbs(name),
    })),
  });

  async function serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const target = parseTarget(path);
    if (target === undefined)
      throw new ActionRefusal(
        404,
        `the subresource API serves ${SUBRESOURCE_NAMES.join(", ")}; ${path} is none of them`,
      );
    // Discovery, version and health are public, as KubeVirt's: the API server's availability check reads them.
    if (typeof target === "string") {
      const answers = {
        discovery: () => resourceList(path.slice(PREFIX.length).split("/")[0] ?? "v1"),
        version: () => ({
          gitVersion: services.version,
          gitCommit: "",
          gitTreeState: "",
          buildDate: "",
          goVersion: "",
          compiler: "",
          platform: `${process.platform}/${process.arch}`,
        }),
        healthz: () => ({ apiserver: { connectivity: "ok" } }),
      };
      sendJson(res, 200, answers[target]());
      return;
    }

    const who = await frontProxyUser(frontProxy, req);
    if ("refused" in who) throw new ActionRefusal(401, who.refused);

    const refused = "resource" in target ? REFUSED_SUBRESOURCES[`${target.resource}/${target.subresource}`] : undefined;
    if (refused !== undefined) throw new ActionRefusal(400, refused);
    const requester = remoteRequester(services.own, who);
    if ("expandVmSpec" in target) {
      if (req.method !== "PUT") throw new ActionRefusal(405, `expand-vm-spec takes PUT, not ${req.method ?? ""}`);
      const body = async () => {
        const bytes = await readBody(req, limits.webhookBodyBytes);
        if (bytes === undefined)
          throw new ActionRefusal(
            413,
            `a VirtualMachine to expand is at most ${String(limits.webhookBodyBytes)} bytes`,
          );
        return bytes.toString("utf8");
      };
      sendJson(res, 200, await expandSentVm(services.own, requester, target.expandVmSpec, body));
      return;
    }
    if (target.resource === "virtualmachines" && target.subresource === "expand-spec") {
      if (req.method !== "GET")
        throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes GET, not ${req.method ?? ""}`);
      sendJson(res, 200, await expandStoredVm(services.own, requester, target.namespace, target.name));
      return;
    }
    if (target.subresource === OBJECT_GRAPH_SUBRESOURCE) {
      if (req.method !== "GET")
        throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes GET, not ${req.method ?? ""}`);
      sendJson(res, 200, await requestObjectGraph(services.own, requester, target, req));
      return;
    }
    if (target.resource === "virtualmachineinstances" && target.subresource === "vnc/screenshot") {
      if (req.method !== "GET")
        throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes GET, not ${req.method ?? ""}`);
      // KubeVirt's moveCursor wakes a display that went blank; kubevirt-ts does not move the cursor, so it refuses to
      // pretend.
      if (new URL(req.url ?? "/", "https://api").searchParams.get("moveCursor") === "true")
        throw new ActionRefusal(
          400,
          "moveCursor=true is not supported: kubevirt-ts takes the screenshot without " +
            "moving the cursor; leave moveCursor out",
        );
      const png = await requestScreenshot(services, requester, target);
      res.writeHead(200, { "content-type": "image/png", "cache-control": "no-store" }).end(png);
      return;
    }
    if (target.resource === "virtualmachineinstances" && isGuestAgentQuery(target.subresource)) {
      if (req.method !== "GET")
        throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes GET, not ${req.method ?? ""}`);
      sendJson(res, 200, await requestGuestAgent(services, requester, target, target.subresource));
      return;
    }
    if (target.resource === "virtualmachineinstances" && isFreezeAction(target.subresource)) {
      if (req.method !== "PUT")
        throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes PUT, not ${req.method ?? ""}`);
      await requestFreeze(services, requester, target, target.subresource, () => options(req));
      res.writeHead(200).end();
      return;
    }
    if (target.resource === "virtualmachines" && target.subresource === MIGRATION_SUBRESOURCE) {
      if (req.method !== "PUT")
        throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes PUT, not ${req.method ?? ""}`);
      const name = await requestMigration(services, requester, target, () => options(req));
      res.writeHead(202).end();
      log.info("subresource request done", {
        user: who.user,
        namespace: target.namespace,
        resource: target.resource,
        name: target.name,
        subresource: target.subresource,
        migration: name,
      });
      return;
    }
    const vmAction =
      target.resource === "virtualmachines" && ["start", "stop", "restart"].includes(target.subresource)
        ? (target.subresource as VmRequestAction)
        : undefined;
    const vmiAction = target.resource === "virtualmachineinstances" ? domainActionOf(target.subresource) : undefined;
    if (!vmAction && !vmiAction)
      throw new ActionRefusal(
        404,
        `${target.resource}/${target.subresource} is not served here; the subresource ` +
          `API serves ${SUBRESOURCE_NAMES.join(", ")}`,
      );
    if (req.method !== "PUT")
      throw new ActionRefusal(405, `${target.resource}/${target.subresource} takes PUT, not ${req.method ?? ""}`);
    // The body is read once the user is authorized.
    const opts = () => options(req);
    if (vmAction) {
      await requestVmAction(services, requester, target, vmAction, opts);
      res.writeHead(202).end();
    } else if (vmiAction) {
      await requestVmiAction(services, requester, target, vmiAction, opts);
      res.writeHead(200).end();
    }
    log.info("subresource request done", {
      user: who.user,
      namespace: target.namespace,
      resource: target.resource,
      name: target.name,
      subresource: target.subresource,
    });
  }

  return (req, res) => {
    const path = new URL(req.url ?? "/", "https://api").pathname;
    if (!path.startsWith(PREFIX)) return false;
    serve(req, res, path).catch((error: unknown) => {
      if (error instanceof ActionRefusal) {
        sendStatus(res, error.status, error.message, error.details);
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
