import {
  KEPT_MIGRATION_REPORTS,
  MIGRATION_REPORT_RETENTION_MS,
  MIGRATION_SOCKETS,
  type LauncherClient,
  type MigrationReport,
  type MigrationSourceProxy,
  type MigrationStatus,
  MigrationTargetProxy,
  type ProxyTls,
  startMigrationSourceProxy,
} from "@kubevirt-ts/launcher-protocol";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { Gauge, type Registry } from "prom-client";
import { type PodSocket, openPodSocket, openPodSocketsDir } from "../pod-volume.ts";
import { type MigrationState, sourceStep, targetProxyAddress, targetStep } from "./decide.ts";

// The handler's part in live migrations, carried out: decide.ts says what
// to do, this module does it with the launchers, the proxies and the
// metrics. Each call returns the patch of the VMI's migrationState to write,
// which the controller writes with the rest of the VMI's status.

export interface MigrationDriverOptions {
  /** This handler's address, which the source's handler dials: its pod's. */
  address: string;
  /** Where the migration proxy listens. */
  port: number;
  tls: ProxyTls;
  /** The certificate names of the handlers (peers and servers both). */
  handlerIdentity: string;
  podsDir: string;
  launcher: (podUid: string) => Promise<Pick<LauncherClient, "call">>;
  log: Logger;
  registry?: Registry;
  now?: () => Date;
}

interface SourceProxy {
  proxy: MigrationSourceProxy;
  /** The handle on the source pod's sockets folder, open as long as the proxy's sockets are in it. */
  dir: PodSocket;
}

export class MigrationDriver {
  private readonly o: MigrationDriverOptions;
  private readonly target: MigrationTargetProxy;
  private readonly sources = new Map<string, Promise<SourceProxy>>();
  /** The last figures of the migrations sent from this node, by migration uid, oldest first. */
  private readonly reports = new Map<string, MigrationReport>();
  private readonly progress: Record<"processed" | "remaining" | "memoryRate" | "dirtyRate", Gauge> | undefined;

  private constructor(options: MigrationDriverOptions, target: MigrationTargetProxy) {
    this.o = options;
    this.target = target;
    const gauge = (name: string, help: string) =>
      new Gauge({
        name,
        help,
        labelNames: ["namespace", "name"],
        registers: options.registry ? [options.registry] : [],
      });
    // KubeVirt's names for a migration's progress, from the source launcher's job stats.
    this.progress = options.registry
      ? {
          processed: gauge(
            "kubevirt_vmi_migration_data_processed_bytes",
            "The data the VMI's migration has sent so far.",
          ),
          remaining: gauge(
            "kubevirt_vmi_migration_data_remaining_bytes",
            "The data the VMI's migration has yet to send.",
          ),
          memoryRate: gauge(
            "kubevirt_vmi_migration_memory_transfer_rate_bytes",
            "The rate the VMI's memory is sent at, bytes per second.",
          ),
          dirtyRate: gauge(
            "kubevirt_vmi_migration_dirty_memory_rate_bytes",
            "The rate the guest dirties its memory at, pages per second.",
          ),
        }
      : undefined;
  }

  static async start(options: MigrationDriverOptions): Promise<MigrationDriver> {
    const log = options.log;
    const target = await MigrationTargetProxy.start({
      port: options.port,
      tls: options.tls,
      allowedPeers: [options.handlerIdentity],
      log: (level, message, fields) => {
        log[level](message, fields);
      },
    });
    log.info("the migration proxy listens", { address: options.address, port: target.port });
    return new MigrationDriver(options, target);
  }

  get port(): number {
    return this.target.port;
  }

  private now(): Date {
    return this.o.now?.() ?? new Date();
  }

  /** The target's half, for a migration whose targetNode is this node; `podUid` once its target pod runs. */
  async targetSide(
    vmi: VirtualMachineInstance,
    state: MigrationState,
    podUid: string | undefined,
  ): Promise<Partial<MigrationState> | undefined> {
    const launcher = podUid === undefined ? undefined : await this.o.launcher(podUid);
    const status: MigrationStatus | undefined = launcher ? await launcher.call("migrationState") : undefined;
    const step = targetStep({
      state,
      nodeName: state.targetNode ?? "",
      targetPodRunning: launcher !== undefined,
      launcher: status,
      proxy: { address: this.o.address, port: this.target.port },
      now: this.now(),
    });
    const uid = state.migrationUid ?? "";
    if (step.prepare && launcher) await launcher.call("prepareMigrationTarget", vmi);
    if (step.allow && podUid !== undefined)
      this.target.allow(uid, (kind) => openPodSocket(this.o.podsDir, podUid, MIGRATION_SOCKETS[kind]));
    if (step.release) this.target.revoke(uid);
    return step.patch;
  }

  /** The source's half, for a migration whose sourceNode is this node, its domain run by the launcher of `podUid`. */
  async sourceSide(
    vmi: VirtualMachineInstance,
    state: MigrationState,
    podUid: string,
  ): Promise<Partial<MigrationState> | undefined> {
    const launcher = await this.o.launcher(podUid);
    const status = await launcher.call("migrationState");
    this.publish(vmi, status);
    this.keep(vmi, state.migrationUid, status);
    const step = sourceStep({ state, nodeName: state.sourceNode ?? "", launcher: status, now: this.now() });
    const uid = state.migrationUid ?? "";
    if (step.proxy === "start") await this.startSource(uid, state, podUid);
    if (step.call?.method === "migrate") await launcher.call("migrate", step.call.options);
    if (step.call?.method === "abortMigration") await launcher.call("abortMigration");
    if (step.proxy === "stop") await this.stopSource(uid);
    // libvirt's figures of the finished job, the switch-over's real downtime among them: in the log, where the
    // benchmark reads them (they are gone with the source launcher).
    if (step.patch?.completed === true) {
      const p = status.progress;
      this.o.log.info("the migration completed", {
        migration: uid,
        namespace: vmi.metadata.namespace,
        name: vmi.metadata.name,
        target: state.targetNode,
        elapsedMs: p?.elapsedMs,
        downtimeMs: p?.downtimeMs,
        dataProcessed: p?.dataProcessed,
        iteration: p?.iteration,
      });
    }
    return step.patch;
  }

  /** The VMI no longer moves to this node (its target label gone): none of the migration's connections get through. */
  forgetTarget(migrationUid: string): void {
    this.target.revoke(migrationUid);
  }

  /**
   * What this node's handler last read of a migration it sent, while it is kept; undefined when it sent none by that
   * uid.
   */
  report(migrationUid: string): MigrationReport | undefined {
    this.expire();
    return this.reports.get(migrationUid);
  }

  /**
   * Keeps the launcher's figures of the migration it runs (its status answers another uid, or none, before it starts).
   */
  private keep(vmi: VirtualMachineInstance, migrationUid: string | undefined, status: MigrationStatus): void {
    if (migrationUid === undefined || status.migrationUid !== migrationUid || status.phase === "None") return;
    this.reports.delete(migrationUid);
    this.reports.set(migrationUid, {
      namespace: vmi.metadata.namespace ?? "",
      name: vmi.metadata.name ?? "",
      observed: this.now().toISOString(),
      status,
    });
    this.expire();
  }

  private expire(): void {
    const oldest = this.now().getTime() - MIGRATION_REPORT_RETENTION_MS;
    for (const [uid, report] of this.reports) {
      if (this.reports.size <= KEPT_MIGRATION_REPORTS && Date.parse(report.observed) >= oldest) break;
      this.reports.delete(uid);
    }
  }

  private publish(vmi: VirtualMachineInstance, status: MigrationStatus): void {
    if (!this.progress) return;
    const labels = { namespace: vmi.metadata.namespace ?? "", name: vmi.metadata.name ?? "" };
    const p = status.progress;
    if (status.phase !== "Running" || !p) {
      for (const gauge of Object.values(this.progress)) gauge.remove(labels);
      return;
    }
    this.progress.processed.set(labels, p.dataProcessed ?? 0);
    this.progress.remaining.set(labels, p.dataRemaining ?? 0);
    this.progress.memoryRate.set(labels, p.memoryBps ?? 0);
    this.progress.dirtyRate.set(labels, p.dirtyRate ?? 0);
  }

  private async startSource(uid: string, state: MigrationState, podUid: string): Promise<void> {
    if (this.sources.has(uid)) {
      await this.sources.get(uid);
      return;
    }
    const target = targetProxyAddress(state);
    if (!target) throw new Error("the migration's state names no target handler address");
    const starting = (async () => {
      const dir = await openPodSocketsDir(this.o.podsDir, podUid);
      try {
        const proxy = await startMigrationSourceProxy({
          dir: dir.path,
          migration: uid,
          target,
          tls: this.o.tls,
          serverName: this.o.handlerIdentity,
          log: (level, message, fields) => {
            this.o.log[level](message, fields);
          },
        });
        this.o.log.info("carrying a migration to its target", { migration: uid, target });
        return { proxy, dir };
      } catch (error) {
        await dir.close();
        throw error;
      }
    })();
    this.sources.set(uid, starting);
    starting.catch(() => this.sources.delete(uid));
    await starting;
  }

  private async stopSource(uid: string): Promise<void> {
    const source = await this.sources.get(uid)?.catch(() => undefined);
    this.sources.delete(uid);
    if (!source) return;
    // The sockets are unlinked through the folder's handle: it is closed after them.
    await source.proxy.close();
    await source.dir.close();
  }

  async close(): Promise<void> {
    for (const uid of [...this.sources.keys()]) await this.stopSource(uid);
    await this.target.close();
  }
}
