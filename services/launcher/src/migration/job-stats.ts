import type { MigrationOptions, MigrationProgress } from "@kubevirt-ts/launcher-protocol";

// libvirt's job stats as `virsh domjobinfo --rawstats` prints them (one
// typed parameter a line, `name=value`), turned into the protocol's figures.

const FIELDS: Record<string, keyof MigrationProgress> = {
  time_elapsed: "elapsedMs",
  data_total: "dataTotal",
  data_processed: "dataProcessed",
  data_remaining: "dataRemaining",
  memory_total: "memoryTotal",
  memory_processed: "memoryProcessed",
  memory_remaining: "memoryRemaining",
  memory_bps: "memoryBps",
  memory_dirty_rate: "dirtyRate",
  memory_iteration: "iteration",
  disk_total: "diskTotal",
  disk_processed: "diskProcessed",
  disk_remaining: "diskRemaining",
  downtime: "downtimeMs",
};

export interface JobStats {
  /** libvirt's job type: None, Bounded, Unbounded, Completed, Failed, Cancelled. */
  type: string | undefined;
  progress: MigrationProgress | undefined;
}

export function parseJobStats(text: string): JobStats {
  let type: string | undefined;
  const progress: Partial<Record<keyof MigrationProgress, number>> = {};
  for (const line of text.split("\n")) {
    const job = /^\s*Job type:\s*(\w+)/.exec(line);
    if (job) {
      type = job[1];
      continue;
    }
    const field = /^\s*([a-z_]+)\s*[=:]\s*(\d+)\s*$/.exec(line);
    const key = field ? FIELDS[field[1] ?? ""] : undefined;
    if (field && key) progress[key] = Number(field[2]);
  }
  return {
    type,
    progress: progress.elapsedMs === undefined ? undefined : { ...progress, elapsedMs: progress.elapsedMs },
  };
}

/** The disks of the domain's XML that the migration copies: writable file disks in the given folders (by target). */
export function disksToCopy(domainXml: string, copiedDirs: readonly string[]): string[] {
  const targets: string[] = [];
  for (const [disk] of domainXml.matchAll(/<disk\b[\s\S]*?<\/disk>/g)) {
    if (!/^<disk[^>]*\bdevice=['"]disk['"]/.test(disk) || /<readonly\s*\/>/.test(disk)) continue;
    const source = /<source\b[^>]*\b(?:file|dev)=['"]([^'"]+)['"]/.exec(disk)?.[1];
    const target = /<target\b[^>]*\bdev=['"]([^'"]+)['"]/.exec(disk)?.[1];
    if (
      source !== undefined &&
      target !== undefined &&
      copiedDirs.some((dir) => source.startsWith(`${dir.replace(/\/+$/, "")}/`))
    )
      targets.push(target);
  }
  return targets;
}

/**
 * How long the migration may take before it is aborted or switched to post-copy, as KubeVirt's: seconds per GiB of what
 * it moves, at least one GiB.
 */
export function completionTimeoutMs(dataTotalBytes: number | undefined, perGiBSeconds: number): number {
  if (perGiBSeconds === 0) return Infinity;
  const gib = Math.max(1, Math.ceil((dataTotalBytes ?? 0) / 1024 ** 3));
  return gib * perGiBSeconds * 1000;
}

/**
 * What the monitor keeps between two looks at the job: when it last saw the data left go down, and how much was left.
 */
export interface ProgressMark {
  atMs: number;
  remaining: number | undefined;
}

export type MonitorAction =
  | { kind: "none" }
  | { kind: "postCopy"; allowedMs: number }
  | { kind: "abortLate"; allowedMs: number }
  | { kind: "abortStuck"; stuckMs: number };

export interface MonitorInput {
  progress: MigrationProgress;
  mark: ProgressMark;
  nowMs: number;
  mode: "PreCopy" | "PostCopy" | undefined;
  options: Pick<MigrationOptions, "postCopy" | "completionTimeoutPerGiB" | "progressTimeout">;
  /** A switch to post-copy was tried and refused: the migration can only end now. */
  postCopyFailed: boolean;
}

/**
 * KubeVirt's migration monitor, one look at the job: progress is the data left going down since the last look. A
 * migration in post-copy is left alone (the guest runs on the target already). One that made no progress for the
 * progress timeout is stuck (the network, QEMU's connection) and is aborted; one past its completion time switches to
 * post-copy when it may, and is aborted otherwise. 0 turns either timeout off.
 */
export function monitorStep(input: MonitorInput): { mark: ProgressMark; action: MonitorAction } {
  const { progress, nowMs, options } = input;
  const remaining = progress.dataRemaining;
  const previous = input.mark.remaining;
  const progressed = previous === undefined || previous === 0 || (remaining !== undefined && remaining < previous);
  const mark = { atMs: progressed ? nowMs : input.mark.atMs, remaining };
  if (input.mode === "PostCopy") return { mark, action: { kind: "none" } };
  const stuckMs = nowMs - mark.atMs;
  if (options.progressTimeout > 0 && stuckMs > options.progressTimeout * 1000)
    return { mark, action: { kind: "abortStuck", stuckMs } };
  const allowedMs = completionTimeoutMs(progress.dataTotal, options.completionTimeoutPerGiB);
  if (progress.elapsedMs <= allowedMs) return { mark, action: { kind: "none" } };
  return {
    mark,
    action:
      options.postCopy && !input.postCopyFailed ? { kind: "postCopy", allowedMs } : { kind: "abortLate", allowedMs },
  };
}
