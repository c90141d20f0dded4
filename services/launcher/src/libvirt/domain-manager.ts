import { execFile } from "node:child_process";
import { open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import type { Server } from "node:net";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { type Domain, DomainState, type Hypervisor } from "@unraid/libvirt";
import { type GuestAgentInfo, diskTargets } from "@kubevirt-ts/vm-rules";
import { type GuestOsInfo, type VirtualMachineInstance, podNetworkInterface } from "@kubevirt-ts/kubevirt-api";
import { SocketsVolume } from "@kubevirt-ts/node-contract";
import {
  type DomainStats,
  type DomainStatus,
  MIGRATION_SOCKETS,
  type MigrationOptions,
  type MigrationStatus,
  RpcError,
} from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";
import {
  type DomainType,
  type KvmProbe,
  chooseDomainType,
  domainName,
  kvmUnusableReason,
  domainXml,
  firmwareUuid,
} from "../domain/converter.ts";
import { disksToCopy } from "../migration/job-stats.ts";
import { OutgoingMigration } from "../migration/outgoing.ts";
import { relayUnixSocket } from "../migration/relay.ts";
import { prepareDisks } from "../storage/prepare.ts";
import { prepareVmState } from "../storage/vm-state.ts";
import { DOMSTATS_FLAGS, parseDomstats } from "./domstats.ts";
import { AGENT_COMMANDS, type AgentAnswers, guestAgentInfoOf, osInfoOf } from "./guest-agent.ts";
import { toPng } from "./png.ts";

// The launcher's one domain: defined and started from the VMI the handler
// sends, then paused, resumed, shut down or destroyed on request.

const exec = promisify(execFile);

export interface LauncherLayout {
  socketsDir: string;
  containerDisksDir: string;
  kernelBootDir: string;
  disksDir: string;
  cloudInitSecretsDir: string;
  configVolumesDir: string;
  accessCredentialsDir: string;
  claimDisksDir: string;
  claimDevicesDir: string;
  /** Where the pod mounts the VM's backend-storage claim, when it has one. */
  vmStateDir: string;
}

export interface DomainManagerOptions {
  hypervisor: Hypervisor;
  /** The libvirt URI of the hypervisor, for what the binding lacks (reboot, reset, migration), done with virsh. */
  uri: string;
  /** libvirt's unix socket, which a migration target relays into the sockets volume. */
  libvirtSocket: string;
  layout: LauncherLayout;
  allowEmulation: boolean;
  kvmDevice: string;
  /**
   * The guest on the pod's bridge (network/pod-network.ts), when network-setup made one: its address, which the
   * launcher reaches it at; the pod interface's MTU, which the guest's interface takes; and, under the bridge binding,
   * the guest's MAC.
   */
  podNetwork?: { guest: string; mtu: number; mac?: string };
  /** The daemon's swtpm folder (LibvirtDaemon.swtpmStorageDir), which a persistent TPM's state is kept behind. */
  swtpmStorageDir: string;
  /** Called when the domain's status changes by the launcher's own doing, with no libvirt event (a timed thaw). */
  changed?: () => void;
  log: Logger;
}

const STATE_NAMES: Record<number, DomainStatus["state"]> = {
  [DomainState.NOSTATE]: "NoDomain",
  [DomainState.RUNNING]: "Running",
  [DomainState.BLOCKED]: "Blocked",
  [DomainState.PAUSED]: "Paused",
  [DomainState.SHUTDOWN]: "Shutdown",
  [DomainState.SHUTOFF]: "Shutoff",
  [DomainState.CRASHED]: "Crashed",
  [DomainState.PMSUSPENDED]: "PMSuspended",
};

/** Whether this process may use the KVM device: opened read-write, as QEMU opens it, and closed again. */
async function probeKvm(device: string): Promise<KvmProbe> {
  try {
    await (await open(device, "r+")).close();
    return { state: "usable" };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    if (code === "ENOENT") return { state: "missing" };
    const s = await stat(device).catch(() => undefined);
    return s ? { state: "denied", code, mode: s.mode, uid: s.uid, gid: s.gid } : { state: "denied", code };
  }
}

export class DomainManager {
  private readonly o: DomainManagerOptions;
  private domain: Domain | undefined;
  private domainType: DomainType | undefined;
  private name: string | undefined;
  /** The VMI the domain runs, as the handler sent it. */
  private vmi: VirtualMachineInstance | undefined;
  /** The name of the VMI's interface on the pod network, the one a port forward reaches. */
  private podInterface: string | undefined;
  /** While the guest's file systems are frozen: the timer that thaws them, if one was asked for. */
  private frozen: { thaw: NodeJS.Timeout | undefined } | undefined;
  private syncing: Promise<DomainStatus> | undefined;
  /** The last outgoing migration: one at a time; after a failed one another may start, after a completed one none. */
  private outgoing: OutgoingMigration | undefined;
  /** As a migration target: what it was prepared for, until the domain has come and been taken over. */
  private incoming: { status: MigrationStatus; relay: Server } | undefined;
  private preparingTarget: Promise<MigrationStatus> | undefined;
  /** As a migration target, once the domain came and was taken over. */
  private migratedIn: MigrationStatus | undefined;

  constructor(options: DomainManagerOptions) {
    this.o = options;
  }

  private inSocketsVolume(name: keyof typeof SocketsVolume): string {
    return join(this.o.layout.socketsDir, SocketsVolume[name]);
  }

  /** The VMI this launcher runs, once the handler has sent it and its domain started. */
  runningVmi(): VirtualMachineInstance | undefined {
    return this.domain ? this.vmi : undefined;
  }

  /** Whether a domain was ever started by this launcher. */
  hasDomain(): boolean {
    return this.domain !== undefined;
  }

  async state(): Promise<DomainStatus> {
    if (!this.domain && this.incoming) await this.adoptIncoming();
    if (!this.domain) return { state: "NoDomain" };
    const info = await this.o.hypervisor.domainGetInfo(this.domain);
    const state = STATE_NAMES[info.state] ?? "NoDomain";
    // The source's domain stops as its migration completes, a moment before `virsh migrate` returns.
    if (state === "Shutoff" && this.outgoing?.current().phase === "Running") await this.outgoing.finished();
    const migrated = state === "Shutoff" && this.outgoing?.current().phase === "Completed";
    return {
      state,
      domainType: this.domainType,
      ...(migrated ? { reason: "Migrated" as const } : {}),
      ...(this.frozen ? { fsFreezeStatus: "frozen" as const } : {}),
    };
  }

  /**
   * What libvirt counts of the domain now (CPU, vCPUs, memory, network, disks), its devices named as the VMI names
   * them.
   */
  async domainStats(): Promise<DomainStats> {
    this.require();
    const text = await this.virsh("domstats", ...DOMSTATS_FLAGS);
    // The VMI is known once there is a domain.
    const spec = this.vmi?.spec;
    const targets = new Map([...(spec ? diskTargets(spec) : [])].map(([disk, target]) => [target, disk]));
    return parseDomstats(
      text,
      (spec?.domain.devices.interfaces ?? []).map((i) => i.name),
      targets,
    );
  }

  /**
   * Freezes the guest's file systems through its agent, to thaw by themselves after the timeout (0: only when asked).
   */
  async freeze(unfreezeTimeoutSeconds: number): Promise<DomainStatus> {
    await this.virsh("domfsfreeze");
    if (this.frozen?.thaw) clearTimeout(this.frozen.thaw);
    const thaw =
      unfreezeTimeoutSeconds > 0
        ? setTimeout(() => {
            this.o.log.warn("thawing the guest's file systems: nobody did within the unfreeze timeout", {
              unfreezeTimeoutSeconds,
            });
            this.unfreeze().catch((error: unknown) => {
              this.o.log.error("could not thaw the guest's file systems", { error });
            });
          }, unfreezeTimeoutSeconds * 1000)
        : undefined;
    thaw?.unref();
    this.frozen = { thaw };
    return this.state();
  }

  async unfreeze(): Promise<DomainStatus> {
    await this.virsh("domfsthaw");
    if (this.frozen?.thaw) clearTimeout(this.frozen.thaw);
    this.frozen = undefined;
    this.o.changed?.();
    return this.state();
  }

  /** Defines and starts the domain if it is not running; idempotent, one at a time. */
  sync(vmi: VirtualMachineInstance): Promise<DomainStatus> {
    this.syncing ??= this.doSync(vmi).finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private async doSync(vmi: VirtualMachineInstance): Promise<DomainStatus> {
    const { hypervisor, log } = this.o;
    if (this.domain) {
      const current = await this.state();
      if (current.state !== "Shutoff") return current;
      throw new RpcError("Failed", "the domain has stopped; a launcher runs its guest once");
    }
    if (this.preparingTarget)
      throw new RpcError("BadRequest", "this launcher is a migration target: its domain comes from the migration");
    const began = performance.now();
    const xml = await this.prepare(vmi);
    const prepared = performance.now();
    const domain = await hypervisor.domainDefineXML(xml);
    const defined = performance.now();
    const name = domainName(vmi);
    // startStrategy Paused: the guest is created with its CPUs stopped, before it runs an instruction (the binding has
    // no flags for it).
    if (vmi.spec.startStrategy === "Paused") await this.virshOn(name, "start", "--paused");
    else await hypervisor.domainCreate(domain);
    this.domain = domain;
    this.name = name;
    this.vmi = vmi;
    this.podInterface = podNetworkInterface(vmi.spec);
    // How long each step took, in ms: what a slow start spent its time on.
    const took = {
      prepare: Math.round(prepared - began),
      define: Math.round(defined - prepared),
      start: Math.round(performance.now() - defined),
    };
    log.info("domain started", {
      domain: this.name,
      type: this.domainType,
      emulation: this.domainType === "qemu",
      ...(vmi.spec.startStrategy ? { startStrategy: vmi.spec.startStrategy } : {}),
      took,
    });
    return this.state();
  }

  /** Makes the domain's disks and state, at the launcher pod's paths; the domain's XML. */
  private async prepare(vmi: VirtualMachineInstance): Promise<string> {
    const { layout } = this.o;
    const kvm = await probeKvm(this.o.kvmDevice);
    const uid = process.getuid?.() ?? -1;
    this.domainType = chooseDomainType({ kvm, allowEmulation: this.o.allowEmulation, path: this.o.kvmDevice, uid });
    if (this.domainType === "qemu")
      this.o.log.info("the guest runs with QEMU's software emulation", {
        reason: kvmUnusableReason(kvm, this.o.kvmDevice, uid),
      });
    const disks = await prepareDisks(vmi, layout);
    const uuid = firmwareUuid(vmi);
    const vmState = await prepareVmState(vmi, layout.vmStateDir, this.o.swtpmStorageDir, uuid);
    const container = vmi.spec.domain.firmware?.kernelBoot?.container;
    const kernelBoot = container
      ? {
          ...(container.kernelPath !== undefined
            ? { kernel: join(layout.kernelBootDir, basename(container.kernelPath)) }
            : {}),
          ...(container.initrdPath !== undefined
            ? { initrd: join(layout.kernelBootDir, basename(container.initrdPath)) }
            : {}),
        }
      : undefined;
    return domainXml(vmi, {
      domainType: this.domainType,
      uuid,
      disks,
      serialSocket: this.inSocketsVolume("serial"),
      serialLog: this.inSocketsVolume("serialLog"),
      vncSocket: this.inSocketsVolume("vnc"),
      guestAgentSocket: this.inSocketsVolume("guestAgent"),
      ...(kernelBoot ? { kernelBoot } : {}),
      ...(vmState.nvram !== undefined ? { nvram: vmState.nvram } : {}),
      ...(this.o.podNetwork ? { podInterface: this.o.podNetwork } : {}),
    });
  }

  /**
   * Readies this launcher to take the VMI's domain over from another launcher: the same disks at the same paths,
   * libvirt reachable through the sockets volume. The domain comes with the migration (state takes it over).
   */
  prepareMigrationTarget(vmi: VirtualMachineInstance): Promise<MigrationStatus> {
    if (this.domain || this.syncing)
      return Promise.reject(
        new RpcError("BadRequest", "this launcher already runs a domain; a migration target must be a new launcher"),
      );
    if (this.preparingTarget) return this.preparingTarget;
    const preparing = (async () => {
      await this.prepare(vmi);
      const relay = await relayUnixSocket(
        join(this.o.layout.socketsDir, MIGRATION_SOCKETS.libvirt),
        this.o.libvirtSocket,
      );
      this.vmi = vmi;
      this.name = domainName(vmi);
      this.podInterface = podNetworkInterface(vmi.spec);
      this.incoming = { status: { role: "Target", phase: "Prepared" }, relay };
      this.o.log.info("prepared as a migration target", { domain: this.name });
      return this.incoming.status;
    })();
    this.preparingTarget = preparing;
    // A failed preparation may be tried again.
    preparing.catch(() => (this.preparingTarget = undefined));
    return preparing;
  }

  /** Takes over the domain a migration brought, once it runs here. */
  private async adoptIncoming(): Promise<void> {
    const incoming = this.incoming;
    if (!incoming || !this.name || !this.vmi) return;
    // While the migration comes in, libvirt has the domain here, paused; an aborted one's goes again at any moment.
    const domain = await this.o.hypervisor.domainLookupByName(this.name).catch(() => undefined);
    const info = domain ? await this.o.hypervisor.domainGetInfo(domain).catch(() => undefined) : undefined;
    if (!domain || info?.state !== DomainState.RUNNING) return;
    this.domain = domain;
    incoming.relay.close();
    this.incoming = undefined;
    this.migratedIn = { role: "Target", phase: "Completed", endTimestamp: new Date().toISOString() };
    this.o.log.info("the migrated domain runs here", { domain: this.name });
  }

  /** Starts migrating the domain to the launcher behind the handler's proxy sockets; idempotent while it runs. */
  async migrate(options: MigrationOptions): Promise<MigrationStatus> {
    const domain = this.require();
    const current = this.outgoing?.current();
    // One attempt per migration: asked again, the answer is its status, however it went.
    if (current && options.migrationUid !== undefined && current.migrationUid === options.migrationUid) return current;
    if (current?.phase === "Running") {
      if (current.migrationUid === options.migrationUid) return current;
      throw new RpcError("BadRequest", `another migration (${current.migrationUid ?? "without a uid"}) is under way`);
    }
    // After a failed or aborted migration the guest still runs here, and a new migration (to a new target) may start.
    if (current?.phase === "Completed")
      throw new RpcError("BadRequest", "the domain's migration has already ended (Completed): it runs on the target");
    if ((await this.state()).state !== "Running") throw new RpcError("BadRequest", "only a running domain migrates");
    const { layout } = this.o;
    const copiedDirs = [
      layout.disksDir,
      ...(options.allowNonSharedDisks ? [layout.claimDisksDir, layout.claimDevicesDir] : []),
    ];
    const copiedDisks = disksToCopy(await this.o.hypervisor.domainGetXMLDesc(domain), copiedDirs);
    this.outgoing = new OutgoingMigration({
      uri: this.o.uri,
      domain: this.name ?? "",
      socketsDir: layout.socketsDir,
      copiedDisks,
      options,
      virsh: (command, args) => this.virshRun(command, args),
      log: this.o.log,
    });
    return this.outgoing.current();
  }

  async migrationState(): Promise<MigrationStatus> {
    if (this.outgoing) return this.outgoing.current();
    if (this.incoming) await this.adoptIncoming();
    return this.incoming?.status ?? this.migratedIn ?? { phase: "None" };
  }

  async abortMigration(): Promise<MigrationStatus> {
    if (!this.outgoing) throw new RpcError("BadRequest", "no outgoing migration to abort");
    return this.outgoing.abort();
  }

  private require(): Domain {
    if (!this.domain) throw new RpcError("NotDefined", "no domain yet: sync the VMI first");
    return this.domain;
  }

  async pause(): Promise<DomainStatus> {
    await this.o.hypervisor.domainSuspend(this.require());
    return this.state();
  }

  async unpause(): Promise<DomainStatus> {
    await this.o.hypervisor.domainResume(this.require());
    return this.state();
  }

  /**
   * Has libvirt probe QEMU's capabilities now, which it otherwise does when the first domain is defined: called as
   * soon as libvirtd is up, the probe runs while the VMI is handed over and its disks are prepared, not after.
   */
  async probeCapabilities(): Promise<void> {
    // One probe serves KVM and emulation alike; asking for emulation never fails for want of KVM.
    await this.virshRun("domcapabilities", ["--virttype", "qemu"]);
  }

  private async virsh(command: string, ...args: string[]): Promise<string> {
    this.require();
    return this.virshOn(this.name ?? "", command, ...args);
  }

  private virshOn(name: string, command: string, ...args: string[]): Promise<string> {
    return this.virshRun(command, [name, ...args]);
  }

  private async virshRun(command: string, args: string[]): Promise<string> {
    try {
      return (await exec("virsh", ["-c", this.o.uri, command, ...args])).stdout;
    } catch (error) {
      throw new RpcError(
        "Failed",
        `virsh ${command} failed: ${((error as { stderr?: string }).stderr ?? String(error)).trim()}`,
      );
    }
  }

  /**
   * One command's answer from the guest's QEMU agent (its `return`); fails when no agent answers within the timeout.
   */
  async agent(command: string, args?: Record<string, unknown>, timeoutSeconds = 5): Promise<unknown> {
    const request = JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}) });
    const answer = JSON.parse(await this.virsh("qemu-agent-command", request, "--timeout", String(timeoutSeconds))) as {
      return?: unknown;
    };
    return answer.return;
  }

  /** The guest's OS as its QEMU guest agent reports it; fails when no agent answers. */
  async guestOsInfo(): Promise<GuestOsInfo> {
    return osInfoOf(await this.agent("guest-get-osinfo"));
  }

  /**
   * All the agent tells, for KubeVirt's guestosinfo, userlist and filesystemlist: fails when the agent does not
   * answer its version; a later command it does not support is left out.
   */
  async guestAgentInfo(): Promise<GuestAgentInfo> {
    const [first, ...rest] = AGENT_COMMANDS;
    const answers: AgentAnswers = { [first]: await this.agent(first) };
    for (const command of rest) {
      answers[command] = await this.agent(command).catch((error: unknown) => {
        this.o.log.debug("the guest agent did not answer a command", { command, error });
        return undefined;
      });
    }
    return guestAgentInfoOf(answers);
  }

  /**
   * The display's screenshot, written as PNG into the sockets volume, where the handler reads it: QEMU's dump goes to
   * the launcher's own folder first, then the PNG replaces the last one in one rename.
   */
  async screenshot(): Promise<{ bytes: number }> {
    const dump = join(this.o.layout.disksDir, "screenshot.dump");
    await this.virsh("screenshot", "--file", dump);
    const png = toPng(await readFile(dump));
    const target = join(this.o.layout.socketsDir, SocketsVolume.screenshot);
    await writeFile(`${target}.partial`, png, { mode: 0o600 });
    await rename(`${target}.partial`, target);
    await rm(dump, { force: true });
    return { bytes: png.length };
  }

  /**
   * The guest's address on the bridge of the pod-network interface (the masquerade's guest address, or the pod's under
   * the bridge binding), which the launcher reaches directly: probes and port forwards connect there.
   */
  guestAddress(): string {
    this.require();
    if (!this.podInterface || !this.o.podNetwork)
      throw new RpcError("BadRequest", "the VMI has no interface on the pod network to reach the guest through");
    return this.o.podNetwork.guest;
  }

  /** Asks the guest to reboot through ACPI, as pressing a reset button it handles itself. */
  async softReboot(): Promise<DomainStatus> {
    await this.virsh("reboot", "--mode", "acpi");
    return this.state();
  }

  /** Resets the virtual machine at once, without the guest's say, like a hardware reset. */
  async reset(): Promise<DomainStatus> {
    await this.virsh("reset");
    return this.state();
  }

  /** Shuts the guest down within the grace period, then destroys it, and removes its definition. */
  /** Turns the domain off at once; a stop under way (stop) then sees it off and goes on. */
  async kill(): Promise<DomainStatus> {
    const domain = this.require();
    if ((await this.state()).state !== "Shutoff") {
      this.o.log.warn("turning the guest off at once: its stop's grace period is over");
      await this.o.hypervisor.domainDestroy(domain);
    }
    return this.state();
  }

  async stop(graceMs: number): Promise<void> {
    const { hypervisor, log } = this.o;
    if (!this.domain) return;
    const domain = this.domain;
    const deadline = Date.now() + graceMs;
    if ((await this.state()).state !== "Shutoff") {
      await hypervisor.domainShutdown(domain).catch((error: unknown) => {
        log.warn("ACPI shutdown request failed", { error });
      });
      while (Date.now() < deadline && (await this.state()).state !== "Shutoff")
        await new Promise((resolve) => setTimeout(resolve, 250));
      if ((await this.state()).state !== "Shutoff") {
        log.warn("the guest did not shut down within its grace period; destroying it", { graceMs });
        await hypervisor.domainDestroy(domain);
      } else {
        log.info("the guest shut down");
      }
    }
    await hypervisor.domainUndefine(domain).catch(() => undefined);
  }
}
