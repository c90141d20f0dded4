import { CDI_GROUP } from "./schema/datavolume.ts";

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
} as const;

export const ImporterEnv = {
  /** blank, http, registry or pvc. */
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
} as const;

/** The importer's port: its /metrics carry how much is in, as CDI's importer serves it. */
export const IMPORTER_PROGRESS_PORT = 8443;
/** CDI's metric of an import's progress, in percent. */
export const IMPORT_PROGRESS_METRIC = "kubevirt_cdi_import_progress_total";

/** The progress in an importer's /metrics text, as CDI's DataVolume status writes it (45.12%), or undefined. */
export function importProgress(metrics: string): string | undefined {
  const line = metrics.split("\n").find((l) => l.startsWith(`${IMPORT_PROGRESS_METRIC} `) || l.startsWith(`${IMPORT_PROGRESS_METRIC}{`));
  const value = line === undefined ? NaN : Number(line.slice(line.lastIndexOf(" ") + 1));
  if (!Number.isFinite(value)) return undefined;
  return `${(Math.floor(Math.min(Math.max(value, 0), 100) * 100) / 100).toFixed(2)}%`;
}


/** CDI's annotation on a claim its importer filled: Succeeded once the disk is in; the importer pod's phase before. */
export const CLAIM_POD_PHASE = `${CDI_GROUP}/storage.pod.phase`;
/** CDI's annotation on a claim a DataVolume made: the DataVolume it is populated for. */
export const CLAIM_POPULATED_FOR = `${CDI_GROUP}/storage.populatedFor`;
