import { spawn } from "node:child_process";
import { join } from "node:path";
import { MIGRATION_SOCKETS, type MigrationOptions, type MigrationStatus } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";
import { type ProgressMark, monitorStep, parseJobStats } from "./job-stats.ts";

// The source's side of a live migration, with virsh against the launcher's
// own session daemon (the Node binding has no migrate, job stats nor abort;
// ADR 19): `virsh migrate` runs for as long as the migration does, peer to
// peer, to the target's libvirt behind the handler's proxy socket; a monitor
// reads libvirt's job stats twice a second, aborts a migration that makes
// no progress for its progress timeout, and switches to post-copy or aborts
// once the migration has run past its completion time (job-stats.ts).

/** How often the job's figures are read. */
export const MONITOR_INTERVAL_MS = 500;

export interface OutgoingMigrationOptions {
  /** virsh's connection URI of the launcher's libvirt. */
  uri: string;
  domain: string;
  socketsDir: string;
  /** The domain's disks (targets) copied to the target over NBD. */
  copiedDisks: string[];
  options: MigrationOptions;
  /** Runs a virsh command against the launcher's libvirt; its output. */
  virsh: (command: string, args: string[]) => Promise<string>;
  log: Logger;
}

/** virsh's arguments for the migration. */
export function migrateArgs(
  o: Pick<OutgoingMigrationOptions, "uri" | "domain" | "socketsDir" | "copiedDisks" | "options">,
): string[] {
  const socket = (name: keyof typeof MIGRATION_SOCKETS) => join(o.socketsDir, MIGRATION_SOCKETS[name]);
  return [
    "-c",
    o.uri,
    "migrate",
    "--live",
    "--p2p",
    "--persistent",
    ...(o.options.autoConverge ? ["--auto-converge"] : []),
    ...(o.options.postCopy ? ["--postcopy"] : []),
    ...(o.options.bandwidthMiB > 0 ? ["--bandwidth", String(o.options.bandwidthMiB)] : []),
    "--migrateuri",
    `unix://${socket("memory")}`,
    ...(o.copiedDisks.length > 0
      ? ["--copy-storage-inc", "--migrate-disks", o.copiedDisks.join(","), "--disks-uri", `unix://${socket("disks")}`]
      : []),
    o.domain,
    `qemu+unix:///session?socket=${socket("libvirt")}`,
  ];
}

export class OutgoingMigration {
  private readonly o: OutgoingMigrationOptions;
  private status: MigrationStatus;
  private monitor: NodeJS.Timeout | undefined;
  private stderr = "";
  /** Set when the monitor aborted the migration for running past its completion time. */
  private timedOutAfterMs: number | undefined;
  /** Set when the monitor aborted the migration for making no progress. */
  private stuckForMs: number | undefined;
  /** When the data left last went down, and how much was left then. */
  private mark: ProgressMark = { atMs: Date.now(), remaining: undefined };
  /** Why the switch to post-copy failed, when it did. */
  private postCopyFailure: string | undefined;
  private readonly done: Promise<MigrationStatus>;

  constructor(options: OutgoingMigrationOptions) {
    this.o = options;
    this.status = {
      role: "Source",
      ...(options.options.migrationUid !== undefined ? { migrationUid: options.options.migrationUid } : {}),
      phase: "Running",
      mode: "PreCopy",
      startTimestamp: new Date().toISOString(),
    };
    this.done = new Promise((resolve) => {
      const args = migrateArgs(options);
      options.log.info("migrating the domain", { args: args.slice(2).join(" ") });
      const child = spawn("virsh", args, { stdio: ["ignore", "ignore", "pipe"] });
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        if (this.stderr.length < 8192) this.stderr += chunk;
      });
      child.once("error", (error) => {
        this.stderr += error.message;
      });
      child.once("close", (code) => {
        void this.finish(code === 0).then(resolve);
      });
    });
    this.monitor = setInterval(() => {
      void this.poll();
    }, MONITOR_INTERVAL_MS);
  }

  current(): MigrationStatus {
    return this.status;
  }

  /** Resolves once `virsh migrate` has ended, with the migration's final status. */
  finished(): Promise<MigrationStatus> {
    return this.done;
  }

  /** Asks libvirt to abort the job; the status says how it went once `virsh migrate` has ended. */
  async abort(): Promise<MigrationStatus> {
    if (this.status.phase !== "Running" || this.status.abortStatus !== undefined) return this.status;
    this.status = { ...this.status, abortStatus: "InProgress" };
    try {
      await this.o.virsh("domjobabort", [this.o.domain]);
    } catch (error) {
      this.o.log.warn("could not abort the migration", { error });
      // A migration that ended meanwhile settles the abort's status itself.
      if (this.running()) this.status = { ...this.status, abortStatus: "Failed" };
    }
    return this.status;
  }

  /** Whether `virsh migrate` still runs (the status changes while a poll awaits). */
  private running(): boolean {
    return this.status.phase === "Running";
  }

  private async poll(): Promise<void> {
    if (!this.running()) return;
    let stats;
    try {
      stats = parseJobStats(await this.o.virsh("domjobinfo", [this.o.domain, "--rawstats"]));
    } catch (error) {
      this.o.log.debug("could not read the migration's job stats", { error });
      return;
    }
    if (!this.running() || !stats.progress) return;
    this.status = { ...this.status, progress: stats.progress };
    const { mark, action } = monitorStep({
      progress: stats.progress,
      mark: this.mark,
      nowMs: Date.now(),
      mode: this.status.mode,
      options: this.o.options,
      postCopyFailed: this.postCopyFailure !== undefined,
    });
    this.mark = mark;
    if (action.kind === "none" || this.status.abortStatus !== undefined) return;
    if (action.kind === "abortStuck") {
      this.o.log.warn("aborting the migration: the data left has not gone down for its progress timeout", {
        stuckMs: action.stuckMs,
      });
      this.stuckForMs = action.stuckMs;
      await this.abort();
    } else if (action.kind === "postCopy") {
      this.o.log.info("switching the migration to post-copy: pre-copy ran past its completion time", {
        allowedMs: action.allowedMs,
      });
      try {
        await this.o.virsh("migrate-postcopy", [this.o.domain]);
        this.status = { ...this.status, mode: "PostCopy" };
      } catch (error) {
        // QEMU refuses when post-copy cannot be had (the target's QEMU without userfaultfd): the pre-copy goes no
        // better, so it ends.
        this.postCopyFailure = error instanceof Error ? error.message : String(error);
        this.o.log.warn("could not switch the migration to post-copy; aborting it", { error });
        await this.abort();
      }
    } else {
      this.o.log.warn("aborting the migration: it ran past its completion time", { allowedMs: action.allowedMs });
      this.timedOutAfterMs = action.allowedMs;
      await this.abort();
    }
  }

  private async finish(succeeded: boolean): Promise<MigrationStatus> {
    if (this.monitor) clearInterval(this.monitor);
    this.monitor = undefined;
    const endTimestamp = new Date().toISOString();
    const abortStatus =
      this.status.abortStatus === undefined ? undefined : succeeded ? ("Failed" as const) : ("Succeeded" as const);
    if (succeeded) {
      // The completed job's figures, the real downtime among them, while the source still holds them.
      const completed = await this.o.virsh("domjobinfo", [this.o.domain, "--completed", "--rawstats"]).then(
        (text) => parseJobStats(text).progress,
        () => undefined,
      );
      this.status = {
        ...this.status,
        phase: "Completed",
        endTimestamp,
        ...(completed ? { progress: completed } : {}),
        ...(abortStatus ? { abortStatus } : {}),
      };
    } else {
      const reason =
        this.postCopyFailure !== undefined
          ? `Live migration could not switch to post-copy and has been aborted: ${this.postCopyFailure}`
          : this.stuckForMs !== undefined
            ? `Live migration stuck for ${String(Math.round(this.stuckForMs / 1000))} seconds and has been aborted`
            : this.timedOutAfterMs !== undefined
              ? "Live migration is not completed " +
                `after ${String(Math.round(this.timedOutAfterMs / 1000))} seconds and has been ` +
                "aborted"
              : abortStatus === "Succeeded"
                ? "Live migration aborted"
                : `Live migration failed: ${this.stderr.trim() || "virsh migrate failed"}`;
      this.status = {
        ...this.status,
        phase: "Failed",
        endTimestamp,
        failureReason: reason.slice(0, 2048),
        ...(abortStatus ? { abortStatus } : {}),
      };
    }
    this.o.log.info("the migration ended", {
      phase: this.status.phase,
      ...(this.status.failureReason !== undefined ? { reason: this.status.failureReason } : {}),
      progress: this.status.progress,
    });
    return this.status;
  }
}
