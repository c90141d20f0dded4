import { Agent, type RequestOptions, request } from "node:https";
import { request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import type { KubeConfig } from "@kubernetes/client-node";
import { ApiError, isNotFound } from "./errors.ts";
import type { RestClientMetrics } from "./metrics.ts";
import { type ResourceType, resourcePath, resources } from "./resources.ts";
import { TokenFile } from "./token-file.ts";
import type { KubeObject, ObjectList, Status, WatchEvent } from "./types.ts";

// A small client for the Kubernetes REST API: the verbs controllers use,
// watches as streams of events, errors as ApiError, and a metric for every
// request. It takes its credentials from a KubeConfig; a token kept in a file
// (the pod's service account) is read again as the kubelet rotates it.

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  limit?: number;
  continue?: string;
}

export interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  timeoutSeconds?: number;
}

export type PatchType = "json" | "merge" | "strategic";
const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

export interface DeleteOptions {
  /** Delete only the object with this UID, not a newer one of the same name. */
  uid?: string;
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  gracePeriodSeconds?: number;
}

interface Call {
  verb: string;
  method: string;
  type: ResourceType;
  path: string;
  subresource?: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

function queryString(query: Call["query"]): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

async function readBody(res: IncomingMessage): Promise<string> {
  let body = "";
  res.setEncoding("utf8");
  for await (const chunk of res) body += chunk as string;
  return body;
}

function parseStatus(body: string, code: number): Status {
  try {
    return JSON.parse(body) as Status;
  } catch {
    return { code, message: body.slice(0, 500) };
  }
}

export class KubeClient {
  private readonly server: URL;
  private readonly options: RequestOptions;
  private readonly metrics: RestClientMetrics | undefined;
  /** The service account's token file, when the credentials are one; else the token (if any) is in options.headers. */
  private readonly tokenFile: TokenFile | undefined;
  /** One connection pool, without client credentials, shared by the clients of all users. */
  private userAgent: Agent | undefined;

  private constructor(server: URL, options: RequestOptions, metrics?: RestClientMetrics, tokenFile?: TokenFile) {
    this.server = server;
    this.options = options;
    this.metrics = metrics;
    this.tokenFile = tokenFile;
  }

  /**
   * The same API server, reached as someone else: with their bearer token and
   * nothing of this client's own credentials (its client certificate or token).
   * The API uses it to act as the signed-in user.
   */
  withBearerToken(token: string): KubeClient {
    const { ca, rejectUnauthorized } = this.options;
    this.userAgent ??= new Agent({ keepAlive: true, ca, rejectUnauthorized });
    const child = new KubeClient(
      this.server,
      { ca, rejectUnauthorized, agent: this.userAgent, headers: { authorization: `Bearer ${token}` } },
      this.metrics,
    );
    child.userAgent = this.userAgent;
    return child;
  }

  static async fromKubeConfig(kubeConfig: KubeConfig, metrics?: RestClientMetrics): Promise<KubeClient> {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig names no current cluster");
    const options: RequestOptions = {};
    await kubeConfig.applyToHTTPSOptions(options);
    options.agent = new Agent({
      keepAlive: true,
      ca: options.ca,
      cert: options.cert,
      key: options.key,
      rejectUnauthorized: options.rejectUnauthorized,
    });
    // In a pod the credentials are the service account's token file (the kubeconfig's tokenFile auth
    // provider): the client reads the file itself, again and again, instead of the token read once above.
    const path = (kubeConfig.getCurrentUser()?.authProvider as { config?: { tokenFile?: unknown } } | undefined)?.config
      ?.tokenFile;
    if (typeof path !== "string") return new KubeClient(new URL(cluster.server), options, metrics);
    const headers: Record<string, string> = { ...(options.headers as Record<string, string> | undefined) };
    delete headers.Authorization;
    options.headers = headers;
    return new KubeClient(new URL(cluster.server), options, metrics, new TokenFile(path));
  }

  /**
   * Sends the call. Credentials from a token file: a 401 makes the client read
   * the file at once and, when it holds another token (the kubelet rotated it
   * since), send the call once more with that one.
   */
  private async open(call: Call): Promise<IncomingMessage> {
    const token = await this.tokenFile?.token();
    const res = await this.send(call, token);
    if (res.statusCode !== 401 || this.tokenFile === undefined) return res;
    const reread = await this.tokenFile.refresh();
    if (reread === token) return res;
    res.resume();
    return this.send(call, reread);
  }

  private send(call: Call, token: string | undefined): Promise<IncomingMessage> {
    const url = new URL(call.path + queryString(call.query), this.server);
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const headers: Record<string, string> = {
      ...(this.options.headers as Record<string, string> | undefined),
      accept: "application/json",
    };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) {
      headers["content-type"] = call.contentType ?? "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    const sendRequest = url.protocol === "http:" ? httpRequest : request;
    return new Promise((resolve, reject) => {
      const req = sendRequest(url, { ...this.options, method: call.method, headers, signal: call.signal }, resolve);
      req.on("error", reject);
      req.end(body);
    });
  }

  private async call<T>(call: Call): Promise<T> {
    const started = performance.now();
    const resource = call.subresource ? `${call.type.plural}/${call.subresource}` : call.type.plural;
    let code = "error";
    try {
      const res = await this.open(call);
      code = String(res.statusCode ?? 0);
      const text = await readBody(res);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300)
        throw new ApiError(status, parseStatus(text, status), `${call.verb} ${call.path}`);
      return (text === "" ? undefined : JSON.parse(text)) as T;
    } finally {
      this.metrics?.observe(
        { verb: call.verb, method: call.method, resource, code },
        (performance.now() - started) / 1000,
      );
    }
  }

  get<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T> {
    return this.call({ verb: "get", method: "GET", type, path: resourcePath(type, namespace, name) });
  }

  /** The object, or undefined when the API server answers 404; any other error is thrown (only a 404 means absent). */
  async find<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    try {
      return await this.get<T>(type, namespace, name);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Whether the API server serves the kind (discovery of its group version); only a 404 means it does not. */
  async serves(type: ResourceType): Promise<boolean> {
    const path = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
    try {
      const list = await this.call<{ resources?: { name: string }[] }>({
        verb: "get",
        method: "GET",
        type: { ...type, plural: "discovery" },
        path,
      });
      return (list.resources ?? []).some((r) => r.name === type.plural);
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  list<T extends KubeObject>(
    type: ResourceType,
    namespace?: string,
    options: ListOptions = {},
  ): Promise<ObjectList<T>> {
    return this.call({ verb: "list", method: "GET", type, path: resourcePath(type, namespace), query: { ...options } });
  }

  /** dryRun "All": the API server checks the object (and its admission webhooks see it) but stores nothing. */
  create<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    body: T,
    options: { dryRun?: "All" } = {},
  ): Promise<T> {
    return this.call({
      verb: "create",
      method: "POST",
      type,
      path: resourcePath(type, namespace),
      body,
      ...(options.dryRun ? { query: { dryRun: options.dryRun } } : {}),
    });
  }

  /**
   * Asks the Eviction API to evict a pod: the pod goes as a drain's would, within its disruption budgets (429 while
   * one holds it).
   */
  async evict(namespace: string, name: string): Promise<void> {
    await this.call({
      verb: "create",
      method: "POST",
      type: resources.pods,
      path: resourcePath(resources.pods, namespace, name, "eviction"),
      subresource: "eviction",
      body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace } },
    });
  }

  /** A PUT: optimistic locking through body.metadata.resourceVersion. */
  update<T extends KubeObject>(type: ResourceType, body: T, subresource?: string): Promise<T> {
    const { namespace, name = "" } = body.metadata;
    return this.call({
      verb: "update",
      method: "PUT",
      type,
      path: resourcePath(type, namespace, name, subresource),
      subresource,
      body,
    });
  }

  patch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    patchType: PatchType,
    subresource?: string,
  ): Promise<T> {
    return this.call({
      verb: "patch",
      method: "PATCH",
      type,
      path: resourcePath(type, namespace, name, subresource),
      subresource,
      body: patch,
      contentType: PATCH_CONTENT_TYPES[patchType],
    });
  }

  async delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): Promise<void> {
    const body = {
      kind: "DeleteOptions",
      apiVersion: "v1",
      ...(options.uid ? { preconditions: { uid: options.uid } } : {}),
      ...(options.propagationPolicy ? { propagationPolicy: options.propagationPolicy } : {}),
      ...(options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
    };
    await this.call({ verb: "delete", method: "DELETE", type, path: resourcePath(type, namespace, name), body });
  }

  /**
   * Watches a collection, calling onEvent for each event until the server
   * ends the stream (its timeout), the signal aborts, or the connection fails.
   */
  async watch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const call: Call = {
      verb: "watch",
      method: "GET",
      type,
      path: resourcePath(type, namespace),
      query: { ...options, watch: true, allowWatchBookmarks: true },
      signal,
    };
    const started = performance.now();
    const res = await this.open(call);
    const status = res.statusCode ?? 0;
    this.metrics?.observe(
      { verb: "watch", method: "GET", resource: type.plural, code: String(status) },
      (performance.now() - started) / 1000,
    );
    if (status < 200 || status >= 300)
      throw new ApiError(status, parseStatus(await readBody(res), status), `watch ${call.path}`);
    res.setEncoding("utf8");
    let buffer = "";
    try {
      for await (const chunk of res) {
        buffer += chunk as string;
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          if (line !== "") onEvent(JSON.parse(line) as WatchEvent<T>);
          newline = buffer.indexOf("\n");
        }
      }
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    }
  }
}
