import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Hypervisor } from "@unraid/libvirt";
import { PROBE_PATH } from "@kubevirt-ts/kubevirt-api";
import { LAUNCHER_CLEANUP_SECONDS, SocketsVolume } from "@kubevirt-ts/node-contract";
import { runService } from "@kubevirt-ts/runtime";
import { env } from "./env.ts";
import { AgentCredentials } from "./libvirt/access-credentials.ts";
import { DomainManager } from "./libvirt/domain-manager.ts";
import { DomainEvents, changesStatus } from "./libvirt/domain-events.ts";
import { type LibvirtDaemon, startLibvirtd } from "./libvirt/daemon.ts";
import { PortForwarder } from "./libvirt/port-forward.ts";
import { startPodNetwork } from "./network/pod-network.ts";
import { Prober } from "./probes/prober.ts";
import { Revision } from "./rpc/revision.ts";
import { startRpcServer } from "./rpc/server.ts";

// virt-launcher: one per VMI, in the VMI's pod. It runs libvirt as its own
// unprivileged user, waits for the handler to send the VMI over its socket,
// runs the domain, shuts the guest down when the pod is asked to stop, and
// exits once the domain is gone. The kubelet asks it, on its operations
// port, to probe the guest for the VMI's liveness and readiness probes.
// Idle, it waits: libvirt's events tell it and its handler (through `watch`)
// that the domain changed; a look at a long interval is only a safety net.

let ready = false;
let prober: Prober | undefined;
/** Where the kubelet reads what a container says of its end (the pod's default terminationMessagePath). */
const TERMINATION_MESSAGE = "/dev/termination-log";
/** How long a launcher whose domain migrated away stays, for its handler to read how the migration ended. */
const MIGRATED_LINGER_MS = 30_000;
/** How often the launcher looks whether its domain is gone, should libvirt's event for it have been missed. */
const END_SAFETY_NET_MS = 60_000;

await runService({
  name: "virt-launcher",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  shutdownTimeoutMs: (env.GRACE_PERIOD_SECONDS + LAUNCHER_CLEANUP_SECONDS) * 1000,
  checks: () => ({ launcher: () => (ready ? undefined : "libvirt and the launcher socket are not up yet") }),
  endpoints: () => ({
    [PROBE_PATH.liveness]: () => prober?.check("liveness"),
    [PROBE_PATH.readiness]: () => prober?.check("readiness") ?? "the launcher has not started yet",
  }),
  // The launcher has no API credentials to check a caller with, and nothing scrapes it: the VM's figures are
  // virt-handler's (read over the launcher's socket), so /metrics answers no one on a port any pod can reach.
  metricsAccess: () => () =>
    Promise.resolve({
      status: 403,
      reason: "a launcher serves no /metrics: read the VM's metrics from virt-handler's /metrics",
    }),
  start: async ({ log }) => {
    const daemon: LibvirtDaemon = await startLibvirtd({ stateDir: join(env.STATE_DIR, "libvirt"), log });
    const hypervisor = new Hypervisor({ uri: daemon.uri });
    await hypervisor.connectOpen();
    // Every change of what the launcher reports of its domain counts up; a `watch` from the handler waits for it.
    const revision = new Revision();
    const podNetwork = await startPodNetwork(env.GUEST_NETWORK, log, { notesDir: env.STATE_DIR });
    const manager = new DomainManager({
      hypervisor,
      uri: daemon.uri,
      libvirtSocket: daemon.socket,
      layout: {
        socketsDir: env.SOCKETS_DIR,
        containerDisksDir: env.CONTAINER_DISKS_DIR,
        kernelBootDir: env.KERNEL_BOOT_DIR,
        disksDir: join(env.STATE_DIR, "disks"),
        cloudInitSecretsDir: env.CLOUD_INIT_SECRETS_DIR,
        configVolumesDir: env.CONFIG_VOLUMES_DIR,
        accessCredentialsDir: env.ACCESS_CREDENTIALS_DIR,
        claimDisksDir: env.CLAIM_DISKS_DIR,
        claimDevicesDir: env.CLAIM_DEVICES_DIR,
        vmStateDir: env.VM_STATE_DIR,
      },
      allowEmulation: env.ALLOW_EMULATION,
      kvmDevice: env.KVM_DEVICE,
      ...(podNetwork ? { podNetwork } : {}),
      swtpmStorageDir: daemon.swtpmStorageDir,
      changed: () => {
        revision.bump();
      },
      log,
    });
    // Off the start's critical path: QEMU's capabilities are probed while the handler comes with the VMI.
    const probing = manager.probeCapabilities().catch((error: unknown) => {
      log.warn("could not have libvirt probe QEMU's capabilities ahead of the domain", { error });
    });
    prober = new Prober(
      {
        vmi: () => manager.runningVmi(),
        state: () => manager.state(),
        guestAddress: () => manager.guestAddress(),
        agent: (command, args, timeoutSeconds) => manager.agent(command, args, timeoutSeconds),
      },
      log,
    );
    const forwarder = new PortForwarder({
      socketsDir: env.SOCKETS_DIR,
      guestAddress: () => manager.guestAddress(),
      log,
    });
    // Access credentials through the guest agent: given once its agent answers, and again whenever their Secrets
    // change.
    const credentials = new AgentCredentials({
      dir: env.ACCESS_CREDENTIALS_DIR,
      agent: (command, args) => manager.agent(command, args),
      log,
    });
    let syncingCredentials = false;
    const syncCredentials = () => {
      const vmi = manager.runningVmi();
      if (!vmi || !manager.hasDomain() || syncingCredentials) return;
      syncingCredentials = true;
      const before = JSON.stringify(credentials.status());
      void credentials.sync(vmi).finally(() => {
        syncingCredentials = false;
        if (JSON.stringify(credentials.status()) !== before) revision.bump();
      });
    };
    // Also the moment the guest's agent connects (its lifecycle event, below).
    const credentialsTimer = setInterval(syncCredentials, 5_000);
    const withCredentials = async () => {
      const status = await manager.state();
      const synced = credentials.status();
      return synced ? { ...status, accessCredentials: synced } : status;
    };
    /** A call that may change the domain counts as a change, whatever libvirt says of it. */
    const changing = <T>(call: Promise<T>): Promise<T> =>
      call.finally(() => {
        revision.bump();
      });
    const server = await startRpcServer(
      join(env.SOCKETS_DIR, SocketsVolume.launcher),
      {
        sync: (vmi) => changing(manager.sync(vmi)),
        state: withCredentials,
        watch: async ({ since, timeoutSeconds }) => {
          const current = await revision.next(since, timeoutSeconds * 1000);
          return { revision: current, status: await withCredentials() };
        },
        pause: () => changing(manager.pause()),
        unpause: () => changing(manager.unpause()),
        softReboot: () => changing(manager.softReboot()),
        reset: () => changing(manager.reset()),
        kill: () => changing(manager.kill()),
        guestOsInfo: () => manager.guestOsInfo(),
        guestAgentInfo: () => manager.guestAgentInfo(),
        screenshot: () => manager.screenshot(),
        domainStats: () => manager.domainStats(),
        freeze: ({ unfreezeTimeoutSeconds }) => changing(manager.freeze(unfreezeTimeoutSeconds)),
        unfreeze: () => changing(manager.unfreeze()),
        portForward: async (forward) => {
          await forwarder.open(forward);
          return {};
        },
        prepareMigrationTarget: (vmi) => changing(manager.prepareMigrationTarget(vmi)),
        migrate: (options) => changing(manager.migrate(options)),
        migrationState: () => manager.migrationState(),
        abortMigration: () => changing(manager.abortMigration()),
      },
      log,
    );
    ready = true;

    // The launcher's life is its domain's: once the guest has stopped, the pod is done.
    let crashed = false;
    // The end is decided once: a slow read of the state can still be under way when the next look starts, and a second
    // SIGTERM during the graceful stop would end the process by the signal's default instead.
    let ending = false;
    const lookForEnd = () => {
      if (!manager.hasDomain() || ending) return;
      manager.state().then(
        (status) => {
          if (ending) return;
          if (status.reason === "Migrated") {
            ending = true;
            // The guest runs on the target now: the launcher stays a while for its handler to read the migration's end.
            log.info("the domain has migrated away; exiting shortly", { lingerMs: MIGRATED_LINGER_MS });
            clearInterval(endSafetyNet);
            setTimeout(() => process.kill(process.pid, "SIGTERM"), MIGRATED_LINGER_MS).unref();
          } else if (status.state === "Shutoff" || status.state === "Crashed") {
            ending = true;
            log.info("the domain is gone; exiting", { state: status.state });
            // The pod's end says how the guest ended: a clean exit (the pod Succeeded) only for a guest that shut off.
            if (status.state === "Crashed") crashed = true;
            clearInterval(endSafetyNet);
            process.kill(process.pid, "SIGTERM");
          }
        },
        (error: unknown) => {
          log.warn("could not read the domain's state", { error });
        },
      );
    };
    // libvirt's events drive both the handler's watch and the launcher's own end; the interval only catches a missed
    // one.
    const events = new DomainEvents({
      uri: daemon.uri,
      onEvent: (event) => {
        if (!changesStatus(event)) return;
        revision.bump();
        if (event.type === "agent-lifecycle") syncCredentials();
        lookForEnd();
      },
      log,
    });
    const endSafetyNet = setInterval(lookForEnd, END_SAFETY_NET_MS);

    return async () => {
      clearInterval(endSafetyNet);
      clearInterval(credentialsTimer);
      events.close();
      revision.close();
      ready = false;
      // Stopped after the guest failed its liveness probe (the kubelet stops a container for that), or its guest
      // crashed: the pod fails, saying why.
      const livenessFailure = prober?.livenessFailure();
      const failure =
        livenessFailure !== undefined
          ? `The liveness probe failed: ${livenessFailure}`
          : crashed
            ? "The guest crashed."
            : undefined;
      if (failure !== undefined) {
        process.exitCode = 1;
        await writeFile(TERMINATION_MESSAGE, failure).catch((error: unknown) => {
          log.warn("could not write the termination message", { error });
        });
      }
      await probing;
      await forwarder.close();
      await manager.stop(env.GRACE_PERIOD_SECONDS * 1000);
      await podNetwork?.dhcp.close();
      server.close();
      await hypervisor.connectClose().catch(() => undefined);
      await daemon.stop();
    };
  },
});
