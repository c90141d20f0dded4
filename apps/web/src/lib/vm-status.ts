// How a VM's state reads to a person: KubeVirt's printable status in words,
// and how long ago something happened.

const WORDS: Record<string, string> = {
  Stopped: "Stopped",
  Provisioning: "Provisioning",
  Starting: "Starting",
  Running: "Running",
  Paused: "Paused",
  Stopping: "Stopping",
  Terminating: "Deleting",
  CrashLoopBackOff: "Crashed, restarting after a pause",
  Migrating: "Migrating",
  Unknown: "Unknown",
  ErrorUnschedulable: "Cannot be placed on a node",
  ErrImagePull: "Cannot pull its image",
  ImagePullBackOff: "Cannot pull its image, retrying",
  ErrorPvcNotFound: "Its disk's claim is missing",
  DataVolumeError: "Its data volume failed",
  WaitingForVolumeBinding: "Waiting for its disk",
};

export function statusInWords(printableStatus: string | undefined): string {
  return WORDS[printableStatus ?? "Stopped"] ?? printableStatus ?? "Stopped";
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
