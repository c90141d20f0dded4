import { CDI_GROUP } from "@kubevirt-ts/kubevirt-api";

// The importer pod that fills a DataVolume's claim where kubevirt-ts serves
// DataVolumes: its folders, environment and port, shared by the controller
// (which makes the pod, services/controller/src/datavolume/importer-pod.ts)
// and the importer (services/importer), so the two never disagree.

/** The importer container's name. */
export const IMPORTER_CONTAINER = "importer";

export const ImporterDir = {
  /** The claim being filled: disk.img at its root, written as disk.img.partial and renamed when whole. */
  target: "/data",
  /** What the disk comes from: a claim to copy (mounted read-only), or the disk copied out of a containerDisk image. */
  source: "/source",
  /** The containerDisk copier, handed from the importer image to the registry image's init container. */
  tools: "/var/run/kubevirt-ts/importer-tools",
  /** The http source's certConfigMap: the certificates its server is verified with. */
  certs: "/certs",
  /** The http source's secretExtraHeaders, each Secret in a folder of its own: each file one header. */
  secretHeaders: "/extraheaders",
} as const;

/** The sources the importer fills a claim from, as a DataVolume's spec.source names them. */
export const IMPORTER_SOURCES = ["blank", "http", "registry", "pvc", "upload"] as const;
export type ImporterSource = (typeof IMPORTER_SOURCES)[number];

export const ImporterEnv = {
  /** One of IMPORTER_SOURCES. */
  source: "IMPORTER_SOURCE",
  /** The http source's URL. */
  endpoint: "IMPORTER_ENDPOINT",
  /** Request headers for the http source, as a JSON array of 'Name: value'. */
  extraHeaders: "IMPORTER_EXTRA_HEADERS",
  /** Basic authentication for the http source, from the DataVolume's secretRef. */
  accessKeyId: "IMPORTER_ACCESS_KEY_ID",
  secretKey: "IMPORTER_SECRET_KEY",
  /** The disk's size in bytes: an image is grown to it, and one larger is refused. */
  diskBytes: "IMPORTER_DISK_BYTES",
  targetDir: "IMPORTER_TARGET_DIR",
  sourceDir: "IMPORTER_SOURCE_DIR",
  /**
   * The upload source's key, which the upload proxy presents (from the Secret uploadKeySecretName, by secretKeyRef).
   */
  uploadKey: "IMPORTER_UPLOAD_KEY",
  /**
   * "true" when the pvc source's disk is open by a running VM whose guest the snapshot controller quiesced (froze or
   * paused): qemu-img reads it despite QEMU's image lock (force-share, -U).
   */
  sourceInUse: "IMPORTER_SOURCE_IN_USE",
  /** Set when the http source names a certConfigMap (mounted at ImporterDir.certs). */
  certDir: "IMPORTER_CERT_DIR",
  /** Set when the http source names secretExtraHeaders (mounted below ImporterDir.secretHeaders). */
  secretHeadersDir: "IMPORTER_SECRET_HEADERS_DIR",
} as const;

/** The importer's port: its /metrics carry how much is in, as CDI's importer serves it. */
export const IMPORTER_PROGRESS_PORT = 8443;
/** CDI's metric of an import's progress, in percent. */
export const IMPORT_PROGRESS_METRIC = "kubevirt_cdi_import_progress_total";

/** The progress in an importer's /metrics text, as CDI's DataVolume status writes it (45.12%), or undefined. */
export function importProgress(metrics: string): string | undefined {
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith(`${IMPORT_PROGRESS_METRIC} `) || l.startsWith(`${IMPORT_PROGRESS_METRIC}{`));
  const value = line === undefined ? NaN : Number(line.slice(line.lastIndexOf(" ") + 1));
  if (!Number.isFinite(value)) return undefined;
  return `${(Math.floor(Math.min(Math.max(value, 0), 100) * 100) / 100).toFixed(2)}%`;
}

/** CDI's annotation on a claim its importer filled: Succeeded once the disk is in; the importer pod's phase before. */
export const CLAIM_POD_PHASE = `${CDI_GROUP}/storage.pod.phase`;
/** CDI's annotation on a claim a DataVolume made: the DataVolume it is populated for. */
export const CLAIM_POPULATED_FOR = `${CDI_GROUP}/storage.populatedFor`;

/** CDI's annotation on a claim filled by an upload (virtctl image-upload checks it on a claim it did not make). */
export const CLAIM_UPLOAD_TARGET = `${CDI_GROUP}/storage.upload.target`;
/** CDI's annotation on an upload's claim: "true" while its upload server takes an upload (virtctl waits for it). */
export const CLAIM_POD_READY = `${CDI_GROUP}/storage.pod.ready`;

/**
 * The upload server's port on an upload pod (the importer with the upload source), where the upload proxy sends the
 * image.
 */
export const UPLOAD_SERVER_PORT = 8444;
/**
 * The key the upload proxy presents to an upload pod: made at random by the controller and kept in a Secret the
 * DataVolume owns, named as the upload pod (uploadKeySecretName), under this key. The pod takes it by secretKeyRef and
 * virt-api reads it with its own account; a `view` user, who reads the pod, reads no Secret.
 */
export const UPLOAD_KEY_SECRET_KEY = "uploadKey";
/**
 * CDI's upload paths, on the upload proxy and the upload server alike: sync answers once the disk is in, async once the
 * image is received and checked.
 */
export const UploadPath = { sync: "/v1beta1/upload", async: "/v1beta1/upload-async" } as const;
/** The upload pod's name, as CDI names it. */
export const uploadPodName = (claim: string): string => `cdi-upload-${claim}`;
/** The Secret holding an upload pod's key (UPLOAD_KEY_SECRET_KEY): the pod's name. */
export const uploadKeySecretName = uploadPodName;
