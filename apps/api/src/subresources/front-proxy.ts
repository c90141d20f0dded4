import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { X509Certificate } from "node:crypto";
import { type KubeClient, type KubeObject, resources } from "@kubevirt-ts/kube";
import { type ClientTrust, type TrustNames, clientCertRefusal, pemCertificates } from "../client-cert.ts";

// Who is asking, on a request the Kubernetes API server passed on to
// virt-api as an aggregated API server: the API server authenticated the
// user and names them in headers, over a client certificate of its front
// proxy. Both the CA that certificate must chain to and the header names are
// published by the API server in kube-system/extension-apiserver-authentication,
// as on every cluster with the aggregation layer. A request without such a
// certificate is no one's: its headers could say anything.

export const AUTHENTICATION_CONFIG_MAP = {
  namespace: "kube-system",
  name: "extension-apiserver-authentication",
} as const;

export interface FrontProxyConfig extends ClientTrust {
  userHeaders: string[];
  groupHeaders: string[];
  extraPrefixes: string[];
}

export interface RemoteUser {
  user: string;
  groups: string[];
  extra: Record<string, string[]>;
}

const jsonList = (text: string | undefined, fallback: string[]): string[] => {
  if (text === undefined || text.trim() === "") return fallback;
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string"))
    throw new Error(`not a JSON list of strings: ${text}`);
  return value;
};

/** The front proxy's settings from the config map's data, with the headers every API server uses kept as defaults. */
export function parseFrontProxyConfig(data: Record<string, string> | undefined): FrontProxyConfig {
  const pem = data?.["requestheader-client-ca-file"];
  if (!pem) {
    throw new Error(
      "requestheader-client-ca-file is missing " +
        `from ${AUTHENTICATION_CONFIG_MAP.namespace}/${AUTHENTICATION_CONFIG_MAP.name}: start the API server ` +
        "with --requestheader-client-ca-file (the aggregation layer)",
    );
  }
  const cas = pemCertificates(pem);
  if (cas.length === 0) throw new Error("requestheader-client-ca-file holds no certificate");
  const merged = (key: string, defaults: string[]) => [...new Set([...defaults, ...jsonList(data[key], [])])];
  return {
    cas,
    allowedNames: jsonList(data["requestheader-allowed-names"], []),
    userHeaders: merged("requestheader-username-headers", ["X-Remote-User"]),
    groupHeaders: merged("requestheader-group-headers", ["X-Remote-Group"]),
    extraPrefixes: merged("requestheader-extra-headers-prefix", ["X-Remote-Extra-"]),
  };
}

const FRONT_PROXY_NAMES: TrustNames = {
  whose: "the API server's front proxy",
  ca: "the requestheader CA",
  namesFrom: "requestheader-allowed-names",
};

/** Why the peer certificate is not the front proxy's, or undefined when it is. */
export function frontProxyRefusal(
  config: FrontProxyConfig,
  peer: X509Certificate | undefined,
  now = new Date(),
): string | undefined {
  return clientCertRefusal(config, FRONT_PROXY_NAMES, peer, now);
}

/** The user the front proxy names; the headers are Node's, lower-cased, each with all its values. */
export function remoteUser(
  config: FrontProxyConfig,
  headers: Record<string, string[] | undefined>,
): RemoteUser | string {
  const first = (names: string[]) =>
    names.map((n) => headers[n.toLowerCase()]).find((values) => values !== undefined && values.length > 0);
  const user = first(config.userHeaders)?.[0];
  if (!user) return "a valid user header is required for authorization";
  const groups = (first(config.groupHeaders) ?? []).flatMap((g) =>
    g
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
  );
  const extra: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(headers)) {
    const prefix = config.extraPrefixes.find((p) => name.startsWith(p.toLowerCase()));
    if (!prefix || !values) continue;
    const raw = name.slice(prefix.length);
    let key = raw;
    try {
      key = decodeURIComponent(raw);
    } catch {
      // Kept as sent.
    }
    extra[key] = [...(extra[key] ?? []), ...values];
  }
  return { user, groups, extra };
}

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

/** The front proxy's settings, read with the API's own account and read again every minute (the CA may rotate). */
export class FrontProxy {
  private cached: { config: FrontProxyConfig; at: number } | undefined;
  private readonly own: KubeClient;
  private readonly maxAgeMs: number;

  constructor(own: KubeClient, maxAgeMs = 60_000) {
    this.own = own;
    this.maxAgeMs = maxAgeMs;
  }

  async config(): Promise<FrontProxyConfig> {
    if (this.cached && Date.now() - this.cached.at < this.maxAgeMs) return this.cached.config;
    const map = await this.own.get<ConfigMap>(
      resources.configMaps,
      AUTHENTICATION_CONFIG_MAP.namespace,
      AUTHENTICATION_CONFIG_MAP.name,
    );
    this.cached = { config: parseFrontProxyConfig(map.data), at: Date.now() };
    return this.cached.config;
  }
}

/**
 * The user the API server names on a request it passed on, or why the request is not taken (its front proxy's
 * certificate, or no user).
 */
export async function frontProxyUser(
  frontProxy: FrontProxy,
  req: IncomingMessage,
): Promise<RemoteUser | { refused: string }> {
  const config = await frontProxy.config();
  const refused = frontProxyRefusal(config, (req.socket as TLSSocket).getPeerX509Certificate());
  if (refused) return { refused };
  const who = remoteUser(config, req.headersDistinct);
  return typeof who === "string" ? { refused: who } : who;
}
