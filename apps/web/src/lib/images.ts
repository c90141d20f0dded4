import type { DataVolume } from "@kubevirt-ts/kubevirt-api";

// The Images page's words for a DataVolume (a disk image in the namespace:
// uploaded, downloaded, copied or blank), and the size a new upload asks
// for. Pure, so it is tested without a browser.

export interface ImageRow {
  name: string;
  /** Where its content came from, in words. */
  source: string;
  /** The disk's size as asked for (a quantity), or "". */
  size: string;
  phase: string;
  /** The phase in words, with the progress while it fills. */
  state: string;
  /** Why it is stuck, when it is. */
  problem: string | undefined;
  /** Whether a VM can boot from it or copy it now. */
  ready: boolean;
}

function sourceInWords(dv: DataVolume): string {
  const source = dv.spec.source ?? {};
  if (source.upload) return "Uploaded";
  if (source.http) return `Downloaded from ${source.http.url}`;
  if (source.registry) return `From image ${source.registry.url.replace(/^docker:\/\//, "")}`;
  if (source.pvc) return `Copy of ${source.pvc.name}`;
  if (source.blank) return "Blank disk";
  return "";
}

const STATES: Record<string, string> = {
  Pending: "Waiting for its claim",
  UploadScheduled: "Starting its upload server",
  UploadReady: "Waiting for an upload",
  ImportScheduled: "Starting its import",
  ImportInProgress: "Importing",
  CloneScheduled: "Starting its copy",
  CloneInProgress: "Copying",
  Succeeded: "Ready",
  Failed: "Failed",
};

export function imageRow(dv: DataVolume): ImageRow {
  const phase = dv.status?.phase ?? "Pending";
  const progress = dv.status?.progress;
  const filling = phase === "ImportInProgress" || phase === "CloneInProgress";
  const running = dv.status?.conditions?.find((c) => c.type === "Running");
  const problem =
    running?.status === "False" && running.reason !== "Completed" && running.message ? running.message : undefined;
  return {
    name: dv.metadata.name ?? "",
    source: sourceInWords(dv),
    size: String(dv.spec.storage?.resources?.requests.storage ?? dv.spec.pvc?.resources?.requests.storage ?? ""),
    phase,
    state: `${STATES[phase] ?? phase}${filling && progress && progress !== "N/A" ? ` (${progress})` : ""}`,
    problem,
    ready: phase === "Succeeded",
  };
}

const GIB = 1024 ** 3;

/**
 * The disk size a new upload asks for by default: the file's size rounded up to whole GiB, at least 1Gi (a qcow2 may
 * hold more: the server says when).
 */
export function defaultUploadSize(fileBytes: number): string {
  return `${String(Math.max(1, Math.ceil(fileBytes / GIB)))}Gi`;
}

/** A name for the DataVolume of an uploaded file: its name, lower-cased, without its extensions, as a DNS label. */
export function imageNameFromFile(fileName: string): string {
  const base = fileName
    .toLowerCase()
    .replace(/\.(gz|xz)$/, "")
    .replace(/\.(qcow2|img|raw|iso)$/, "");
  return (
    base
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 63)
      .replace(/-+$/, "") || "image"
  );
}
