import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Hypervisor } from "@unraid/libvirt";
import { PROBE_PATH, SocketsVolume } from "@kubevirt-ts/kubevirt-api";
import { runService } from "@kubevirt-ts/runtime";
import { env } from "./env.ts";
import { AgentCredentials } from "./libvirt/access-credentials.ts";
import { DomainManager } from "./libvirt/domain-manager.ts";
import { type LibvirtDaemon, startLibvirtd } from "./libvirt/daemon.ts";
import { PortForwarder } from "./libvirt/port-forward.ts";
import { Prober } from "./probes/prober.ts";
import { startRpcServer } from "./rpc/server.ts";

// virt-launcher: one per VMI, in the VMI's pod. It runs libvirt as its own
// unprivileged user, waits for the handler to send the VMI over its socket,
// runs the domain, shuts the guest down when the pod is asked to stop, and
// exits once the domain is gone. The kubelet asks it, on its operations
// port, to probe the guest for the VMI's liveness and readiness probes.

let ready = false;
let prober: Prober | undefined;
/** Where the kubelet reads what a container says of its end (the pod's default terminationMessagePath). */
const TERMINATION_MESSAGE = "/dev/termination-log";
/** How long a launcher whose domain migrated away stays, for its handler to read how the migration ended. */
const MIGRATED_LINGER_MS = 30_000;

await runService({
  name: "virt-launcher",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  shutdownTimeoutMs: (env.GRACE_PERIOD_SECONDS + 15) * 1000,
  checks: () => ({ launcher: () => (ready ? undefined : "libvirt and the launcher socket are not up yet") }),
  endpoints: () => ({
    [PROBE_PATH.liveness]: () => prober?.check("liveness"),
    [PROBE_PATH.readiness]: () => prober?.check("readiness") ?? "the launcher has not started yet",
  }),
  // The launcher has no API credentials to check a caller with, and nothing scrapes it: the VM's figures are
  // virt-handler's (read over the launcher's socket), so /metrics answers no one on a port any pod can reach.
  metricsAccess: () => () => Promise.resolve({ status: 403, reason: "a launcher serves no /metrics: read the VM's metrics from virt-handler's /metrics" }),
  start: async ({ log }) => {
    const daemon: LibvirtDaemon = await startLibvirtd({ stateDir: join(env.STATE_DIR, "libvirt"), log });
    const hypervisor = new Hypervisor({ uri: daemon.uri });
    await hypervisor.connectOpen();
    const manager = new DomainManager({
      hypervisor,
      uri: daemon.uri,
      libvirtSocket: daemon.socket,
      layout: { socketsDir: env.SOCKETS_DIR, containerDisksDir: env.CONTAINER_DISKS_DIR, kernelBootDir: env.KERNEL_BOOT_DIR, disksDir: join(env.STATE_DIR, "disks"), cloudInitSecretsDir: env.CLOUD_INIT_SECRETS_DIR, configVolumesDir: env.CONFIG_VOLUMES_DIR, accessCredentialsDir: env.ACCESS_CREDENTIALS_DIR,
        claimDisksDir: env.CLAIM_DISKS_DIR, claimDevicesDir: env.CLAIM_DEVICES_DIR, vmStateDir: env.VM_STATE_DIR,
      },
      allowEmulation: env.ALLOW_EMULATION,
      kvmDevice: env.KVM_DEVICE,
      guestNetwork: env.GUEST_NETWORK,
      swtpmStorageDir: daemon.swtpmStorageDir,
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
        forwardToGuest: (hostPort, guestPort) => manager.forwardToGuest(hostPort, guestPort),
        userNetwork: () => manager.userNetwork(),
        agent: (command, args, timeoutSeconds) => manager.agent(command, args, timeoutSeconds),
      },
      log,
    );
    const forwarder = new PortForwarder({ socketsDir: env.SOCKETS_DIR, forwardToGuest: (hostPort, guestPort) => manager.forwardToGuest(hostPort, guestPort), log });
    // Access credentials through the guest agent: given once its agent answers, and again whenever their Secrets change.
    const credentials = new AgentCredentials({ dir: env.ACCESS_CREDENTIALS_DIR, agent: (command, args) => manager.agent(command, args), log });
    let syncingCredentials = false;
    const credentialsTimer = setInterval(() => {
      const vmi = manager.runningVmi();
      if (!vmi || !manager.hasDomain() || syncingCredentials) return;
      syncingCredentials = true;
      void credentials.sync(vmi).finally(() => (syncingCredentials = false));
    }, 5_000);
    const withCredentials = async () => {
      const status = await manager.state();
      const synced = credentials.status();
      return synced ? { ...status, accessCredentials: synced } : status;
    };
    const server = await startRpcServer(
      join(env.SOCKETS_DIR, SocketsVolume.launcher),
      {
        sync: (vmi) => manager.sync(vmi),
        state: withCredentials,
        pause: () => manager.pause(),
        unpause: () => manager.unpause(),
        softReboot: () => manager.softReboot(),
        reset: () => manager.reset(),
        kill: () => manager.kill(),
        guestOsInfo: () => manager.guestOsInfo(),
        guestAgentInfo: () => manager.guestAgentInfo(),
        screenshot: () => manager.screenshot(),
        domainStats: () => manager.domainStats(),
        freeze: ({ unfreezeTimeoutSeconds }) => manager.freeze(unfreezeTimeoutSeconds),
        unfreeze: () => manager.unfreeze(),
        portForward: async (forward) => {
          await forwarder.open(forward);
          return {};
        },
        prepareMigrationTarget: (vmi) => manager.prepareMigrationTarget(vmi),
        migrate: (options) => manager.migrate(options),
        migrationState: () => manager.migrationState(),
        abortMigration: () => manager.abortMigration(),
      },
      log,
    );
    ready = true;

    // The launcher's life is its domain's: once the guest has stopped, the pod is done.
    let crashed = false;
    // The end is decided once: a slow read of the state can still be under way when the next look starts, and a second
    // SIGTERM during the graceful stop would end the process by the signal's default instead.
    let ending = false;
    const watch = setInterval(() => {
      if (!manager.hasDomain() || ending) return;
      manager.state().then(
        (status) => {
          if (ending) return;
          if (status.reason === "Migrated") {
            ending = true;
            // The guest runs on the target now: the launcher stays a while for its handler to read the migration's end.
            log.info("the domain has migrated away; exiting shortly", { lingerMs: MIGRATED_LINGER_MS });
            clearInterval(watch);
            setTimeout(() => process.kill(process.pid, "SIGTERM"), MIGRATED_LINGER_MS).unref();
          } else if (status.state === "Shutoff" || status.state === "Crashed") {
            ending = true;
            log.info("the domain is gone; exiting", { state: status.state });
            // The pod's end says how the guest ended: a clean exit (the pod Succeeded) only for a guest that shut off.
            if (status.state === "Crashed") crashed = true;
            clearInterval(watch);
            process.kill(process.pid, "SIGTERM");
          }
        },
        (error: unknown) => {
          log.warn("could not read the domain's state", { error });
        },
      );
    }, 1_000);

    return async () => {
      clearInterval(watch);
      clearInterval(credentialsTimer);
      ready = false;
      // Stopped after the guest failed its liveness probe (the kubelet stops a container for that), or its guest
      // crashed: the pod fails, saying why.
      const livenessFailure = prober?.livenessFailure();
      const failure = livenessFailure !== undefined ? `The liveness probe failed: ${livenessFailure}` : crashed ? "The guest crashed." : undefined;
      if (failure !== undefined) {
        process.exitCode = 1;
        await writeFile(TERMINATION_MESSAGE, failure).catch((error: unknown) => {
          log.warn("could not write the termination message", { error });
        });
      }
      await probing;
      await forwarder.close();
      await manager.stop(env.GRACE_PERIOD_SECONDS * 1000);
      server.close();
      await hypervisor.connectClose().catch(() => undefined);
      await daemon.stop();
    };
  },
});
