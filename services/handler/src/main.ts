import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  Informer,
  KubeClient,
  componentMetricsAccess,
  createRestClientMetrics,
  loadKubeConfig,
} from "@kubevirt-ts/kube";
import { ConsoleServer } from "@kubevirt-ts/node-contract";
import {
  type KubeVirt,
  LiveClusterConfig,
  defaultClusterConfig,
  followLogVerbosity,
  kubeVirtInformerOptions,
} from "@kubevirt-ts/kubevirt-api";
import { runService } from "@kubevirt-ts/runtime";
import { startConsoleServer } from "./console-server.ts";
import { createHandler } from "./controller.ts";
import { startDevicePlugins } from "./device-plugin/plugin.ts";
import { env } from "./env.ts";
import { startHeartbeat } from "./heartbeat.ts";
import { Launchers } from "./launchers.ts";
import { MigrationDriver } from "./migration/wiring.ts";
import { readNodeLabellerLabels } from "./node-labeller.ts";
import { threadpoolCheck } from "./threadpool.ts";
import { createStatsSampler, registerVmMetrics } from "./vm-metrics.ts";

// virt-handler: one per node. It runs the domains of the VMIs handed to its
// node through their launchers, reports their state, and serves their
// consoles to the API.

async function readTls(dir: string) {
  const read = (name: string) =>
    readFile(join(dir, name)).catch((error: unknown) => {
      throw new Error(
        `the console server's ${name} is missing from ${dir} (CONSOLE_TLS_DIR); the ` +
          "chart mounts it from its console TLS Secret",
        { cause: error },
      );
    });
  return { ca: await read("ca.crt"), cert: await read("tls.crt"), key: await read("tls.key") };
}

let synced = (): boolean => false;

await runService({
  name: "virt-handler",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  checks: () => ({
    caches: () => (synced() ? undefined : "the VMI and pod caches have not synced yet"),
    threadpool: threadpoolCheck(),
  }),
  // /metrics only for a token allowed to get it (the chart's scraper account): it lists every VM on the node, by
  // namespace and name.
  metricsAccess: componentMetricsAccess(loadKubeConfig(), env.METRICS_REQUIRE_AUTHORIZATION),
  start: async ({ log, registry }) => {
    const client = await KubeClient.fromKubeConfig(loadKubeConfig(), createRestClientMetrics(registry));
    // The KubeVirt CR's virtHandler log verbosity, followed live (the handler reads nothing else of it).
    const cluster = new LiveClusterConfig(defaultClusterConfig());
    const kvs = new Informer<KubeVirt>({ client, ...kubeVirtInformerOptions(env.POD_NAMESPACE), log });
    kvs.addHandler(cluster.informerHandler());
    followLogVerbosity(cluster, "virtHandler", log, env.LOG_LEVEL);
    const following = new AbortController();
    const followingKubeVirt = kvs.run(following.signal);
    const launchers = new Launchers(env.KUBELET_PODS_DIR, log);
    const tls = await readTls(env.CONSOLE_TLS_DIR);
    // Live migrations cross between handlers over mutual TLS, with the certificate every handler has (the console's).
    const migrations =
      env.HANDLER_ADDRESS === undefined
        ? undefined
        : await MigrationDriver.start({
            address: env.HANDLER_ADDRESS,
            port: env.MIGRATION_PORT,
            tls,
            handlerIdentity: ConsoleServer.handlerIdentity,
            podsDir: env.KUBELET_PODS_DIR,
            launcher: (podUid) => launchers.get(podUid),
            log,
            registry,
          });
    if (!migrations) log.warn("HANDLER_ADDRESS is unset: this handler takes part in no live migration");
    const handler = createHandler({
      client,
      log,
      registry,
      nodeName: env.NODE_NAME,
      launchers,
      workers: env.WORKERS,
      ...(migrations ? { migrations } : {}),
    });
    synced = () => handler.manager.hasSynced();
    const sample = createStatsSampler({
      running: handler.running,
      stats: async (target, timeoutMs) =>
        (await launchers.get(target.podUid)).call("domainStats", undefined, { timeoutMs }),
      log,
    });
    registerVmMetrics({ registry, nodeName: env.NODE_NAME, sample });
    const consoles = await startConsoleServer({
      port: env.CONSOLE_PORT,
      tls,
      allowedClients: env.CONSOLE_CLIENTS,
      podsDir: env.KUBELET_PODS_DIR,
      lookup: handler.consoleTarget,
      act: handler.act,
      guestAgentInfo: async (target) => (await launchers.get(target.podUid)).call("guestAgentInfo"),
      screenshot: async (target) => (await launchers.get(target.podUid)).call("screenshot"),
      freeze: async (target, action, unfreezeTimeoutSeconds) => {
        const launcher = await launchers.get(target.podUid);
        return action === "freeze" ? launcher.call("freeze", { unfreezeTimeoutSeconds }) : launcher.call("unfreeze");
      },
      portForward: async (target, forward) => (await launchers.get(target.podUid)).call("portForward", forward),
      stats: sample,
      migrationReport: (uid) => migrations?.report(uid),
      log,
      registry,
    });
    // devices.kubevirt.io/kvm, tun and vhost-net for the kubelet, as KubeVirt's handler serves them.
    const devicePlugins =
      env.DEVICE_PLUGINS_DIR === undefined
        ? undefined
        : await startDevicePlugins({ pluginsDir: env.DEVICE_PLUGINS_DIR, nodeDevDir: env.NODE_DEV_DIR, log });
    if (!devicePlugins)
      log.warn(
        "DEVICE_PLUGINS_DIR is unset: this node offers no devices.kubevirt.io " +
          "resources, so no VMI that needs KVM can run on it",
      );
    const abort = new AbortController();
    const running = handler.manager.run(abort.signal);
    // The node says it takes VMIs, and what CPUs it runs, once this handler serves them.
    const heartbeat = startHeartbeat({
      client,
      nodeName: env.NODE_NAME,
      intervalMs: env.NODE_HEARTBEAT_INTERVAL_SECONDS * 1000,
      log,
      labels: () => readNodeLabellerLabels(env.NODE_LABELLER_DIR),
      // As KubeVirt's: schedulable once the kubelet took the device plugins, whose resources launcher pods may ask for.
      schedulable: () => devicePlugins === undefined || devicePlugins.plugins.every((p) => p.registered()),
    });
    return async () => {
      await heartbeat.stop();
      await consoles.close();
      await devicePlugins?.close();
      await migrations?.close();
      abort.abort();
      following.abort();
      await Promise.all([running, followingKubeVirt]);
      launchers.closeAll();
    };
  },
});
