import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";

// The key an upload pod (the importer serving an upload DataVolume) takes
// uploads with, derived from the chart's one master key and the DataVolume's
// uid: virt-controller writes it into the pod's Secret, virt-api's upload
// proxy derives it again from the DataVolume it reads, so virt-api needs no
// access to Secrets. Nothing a `view` user reads holds the key or the master.

/** The fewest bytes a master key may have: HMAC-SHA256's own block of strength (the chart makes 32 random bytes). */
export const UPLOAD_MASTER_KEY_MIN_BYTES = 32;

/** HMAC-SHA256(master, "upload/" + the DataVolume's uid), base64url: the key of that DataVolume's upload pod. */
export function deriveUploadKey(master: Uint8Array, dataVolumeUid: string): string {
  if (master.length < UPLOAD_MASTER_KEY_MIN_BYTES)
    throw new Error(
      `the upload master key has ${String(master.length)} bytes, fewer ` +
        `than ${String(UPLOAD_MASTER_KEY_MIN_BYTES)}: give it at least ${String(UPLOAD_MASTER_KEY_MIN_BYTES)} ` +
        "random bytes",
    );
  if (dataVolumeUid === "")
    throw new Error(
      "an upload key is derived from the DataVolume's metadata.uid, and this " +
        "DataVolume has none: read it from the API server",
    );
  return createHmac("sha256", master).update(`upload/${dataVolumeUid}`).digest("base64url");
}

/**
 * The master key in `file` (the chart mounts its Secret kubevirt-ts-upload-master-key there), named in errors by the
 * variable `variable` that points at it; refused when unreadable or shorter than UPLOAD_MASTER_KEY_MIN_BYTES.
 */
export async function readUploadMasterKey(file: string, variable: string): Promise<Buffer> {
  const master = await readFile(file).catch((error: unknown) => {
    throw new Error(
      `${variable} ${file} cannot be read (${error instanceof Error ? error.message : String(error)}): mount ` +
        `the chart's Secret kubevirt-ts-upload-master-key there, or point ${variable} at a file of at ` +
        `least ${String(UPLOAD_MASTER_KEY_MIN_BYTES)} random bytes`,
      { cause: error },
    );
  });
  if (master.length < UPLOAD_MASTER_KEY_MIN_BYTES)
    throw new Error(
      `${variable} ${file} holds ${String(master.length)} bytes, fewer ` +
        `than ${String(UPLOAD_MASTER_KEY_MIN_BYTES)}: put at least ${String(UPLOAD_MASTER_KEY_MIN_BYTES)} ` +
        "random bytes in it (the chart's Secret kubevirt-ts-upload-master-key has 32)",
    );
  return master;
}
