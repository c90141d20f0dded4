import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { promisify } from "node:util";

// A read-only ISO 9660 disk of the files the kubelet mounted for a
// configMap, secret, serviceAccount or downwardAPI volume, as KubeVirt
// makes one. The kubelet's folder holds each key as a link into a hidden,
// timestamped folder (its atomic writer's ..data); the disk holds the keys
// as plain files, and none of the kubelet's own entries.

const exec = promisify(execFile);

/**
 * Writes the ISO of the files in dir, with the volume's label, or an empty one as KubeVirt gives (genisoimage's own
 * default would be CDROM); an empty folder (an optional source that is missing) gives an empty disk.
 */
export async function configVolumeIso(target: string, dir: string, label: string | undefined): Promise<void> {
  // A missing optional ConfigMap or Secret is mounted as an empty folder; make sure there is one to read.
  await mkdir(dir, { recursive: true });
  await exec("genisoimage", [
    "-quiet",
    "-output",
    target,
    "-volid",
    label ?? "",
    "-joliet",
    "-rock",
    "-follow-links",
    "-m",
    "..*",
    dir,
  ]);
}
