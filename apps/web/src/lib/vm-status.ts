import { PrintableStatus } from "@kubevirt-ts/kubevirt-api";

// How a VM's state reads to a person: KubeVirt's printable status in words,
// and how long ago something happened.

/** The statuses that are not already words. */
const WORDS: Partial<Record<string, string>> = {
  [PrintableStatus.Terminating]: "Deleting",
  [PrintableStatus.CrashLoopBackOff]: "Crashed, restarting after a pause",
  [PrintableStatus.ErrorUnschedulable]: "Cannot be placed on a node",
  [PrintableStatus.ErrImagePull]: "Cannot pull its image",
  [PrintableStatus.ImagePullBackOff]: "Cannot pull its image, retrying",
  [PrintableStatus.ErrorPvcNotFound]: "Its disk's claim is missing",
  [PrintableStatus.WaitingForVolumeBinding]: "Waiting for its disk",
};

export function statusInWords(printableStatus: string | undefined): string {
  const status = printableStatus ?? PrintableStatus.Stopped;
  return WORDS[status] ?? status;
}

export const STATUS_FILTERS = ["Running", "Stopped", "Starting", "Stopping", "Paused", "Problem"] as const;

export function matchesStatusFilter(printableStatus: string | undefined, filter: string): boolean {
  if (filter === "") return true;
  const status = printableStatus ?? "Stopped";
  if (filter === "Problem") return !["Running", "Stopped", "Starting", "Stopping", "Paused", "Provisioning", "Terminating"].includes(status);
  return status === filter;
}

export function age(timestamp: string | undefined, now: number): string {
  if (!timestamp) return "";
  const seconds = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (seconds < 60) return `${String(seconds)}s`;
  if (seconds < 3600) return `${String(Math.floor(seconds / 60))}m`;
  if (seconds < 86400) return `${String(Math.floor(seconds / 3600))}h`;
  return `${String(Math.floor(seconds / 86400))}d`;
}
