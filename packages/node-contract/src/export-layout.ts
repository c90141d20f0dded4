import { createHash } from "node:crypto";

// The export server's contract (KubeVirt's virt-exportserver role, docs/data-protection.md): the pod the controller
// makes for a VirtualMachineExport, what it is told, where it serves what, and how virt-api's export proxy reaches it
// for the external link. The paths are KubeVirt's, so that the links in an export's status read as KubeVirt's do.

/** The port the export server listens on (HTTPS), behind its Service's port 443, as KubeVirt's. */
export const EXPORT_SERVER_PORT = 8443;
/** The export server's operations port (health, metrics), apart from the port it serves on. */
export const EXPORT_OPS_PORT = 8444;
/** The export Service's port. */
export const EXPORT_SERVICE_PORT = 443;
/** The label by which an export's Service selects its pod: KubeVirt's. */
export const EXPORT_SERVICE_LABEL = "kubevirt.io.virt-export-service";
/** The export's pod, Service and certificate Secret are named with this prefix and the export's name. */
export const EXPORT_PREFIX = "virt-export";
/** The key of an export's token Secret that holds the token: KubeVirt's and virtctl's. */
export const EXPORT_TOKEN_KEY = "token";
/** The header (or query parameter) that carries the token: KubeVirt's. */
export const EXPORT_TOKEN_HEADER = "x-kubevirt-export-token";
/** How long an export lives when its spec names no ttlDuration: KubeVirt's two hours. */
export const DEFAULT_EXPORT_TTL_MS = 2 * 60 * 60 * 1000;

/** The export server's paths: KubeVirt's. */
export const ExportPath = {
  ready: "/exportready",
  /** A claim's disk, raw, and gzip-compressed. */
  raw: (claim: string) => `/volumes/${claim}/disk.img`,
  gzip: (claim: string) => `/volumes/${claim}/disk.img.gz`,
  /** The VM's manifests for a client inside the cluster (internal) or outside it (external). */
  manifests: (link: "internal" | "external") => `/${link}/manifests/all`,
  /** A Secret carrying the token as the header CDI's http source sends (secretExtraHeaders). */
  secret: (link: "internal" | "external") => `/${link}/manifests/secret`,
} as const;

/** Where the export server reads what it serves: files mounted by the pod, and its environment. */
export const ExportEnv = {
  /** The exported claims, as a JSON array of { name, dir }: the name in the links, the folder holding disk.img. */
  volumes: "EXPORT_VOLUMES",
  tokenFile: "EXPORT_TOKEN_FILE",
  certFile: "EXPORT_CERT_FILE",
  keyFile: "EXPORT_KEY_FILE",
  /** The VM's manifests as JSON (a VM source, or a snapshot's VM), served at ExportPath.manifests; unset otherwise. */
  manifests: "EXPORT_MANIFESTS",
  /** When the export ends (its TTL, RFC 3339): the server exits then. */
  deadline: "EXPORT_DEADLINE",
} as const;

/** Where the export pod mounts its claims, its token and its certificate. */
export const ExportDir = {
  volumes: "/export-volumes",
  token: "/token",
  cert: "/cert",
} as const;

/**
 * The VM manifests an export serves, as the controller writes them into ExportEnv.manifests: for each of the two links,
 * the VM and what brings its disks back from that link (DataVolumes with an http source, which name the header Secret).
 */
export interface ExportManifests {
  internal: unknown[];
  external?: unknown[] | undefined;
  /** The name of the header Secret the manifests' DataVolumes name (secretExtraHeaders). */
  headerSecretName: string;
}

/**
 * The export's pod, Service and certificate Secret: `virt-export-<name>`, as KubeVirt names them; a name too long for a
 * Service (63 characters) is cut and ends with a hash of the whole, so two long names do not meet.
 */
export function exportServiceName(exportName: string): string {
  const whole = `${EXPORT_PREFIX}-${exportName}`;
  if (whole.length <= 63) return whole;
  const hash = createHash("sha256").update(exportName).digest("hex").slice(0, 10);
  return `${whole.slice(0, 52).replace(/[-.]+$/, "")}-${hash}`;
}

/**
 * Where the external link of an export points, below the dashboard's address: KubeVirt's virt-exportproxy path.
 * virt-api's export proxy takes what follows it to the export's Service.
 */
export const EXPORT_PROXY_ROOT = "/api/export.kubevirt.io/";
export const EXPORT_PROXY_PREFIX = `${EXPORT_PROXY_ROOT}v1/namespaces/`;
export const exportProxyBase = (namespace: string, exportName: string): string =>
  `${EXPORT_PROXY_PREFIX}${namespace}/virtualmachineexports/${exportName}`;
