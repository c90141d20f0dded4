import { KubeClient, createRestClientMetrics, loadKubeConfig } from "@kubevirt-ts/kube";
import { runService } from "@kubevirt-ts/runtime";
import { createHandler } from "./controller.ts";
import { env } from "./env.ts";
import { Launchers } from "./launchers.ts";

// virt-handler: one per node. It runs the domains of the VMIs handed to its
// node through their launchers, and reports their state.

let synced = (): boolean => false;

await runService({
  name: "virt-handler",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  checks: () => ({ caches: () => (synced() ? undefined : "the VMI and pod caches have not synced yet") }),
  start: async ({ log, registry }) => {
    const client = await KubeClient.fromKubeConfig(loadKubeConfig(), createRestClientMetrics(registry));
    const launchers = new Launchers(env.KUBELET_PODS_DIR, log);
    const handler = createHandler({ client, log, registry, nodeName: env.NODE_NAME, launchers, workers: env.WORKERS });
    synced = handler.hasSynced;
    const abort = new AbortController();
    const running = handler.run(abort.signal);
    return async () => {
      abort.abort();
      await running;
      launchers.closeAll();
    };
  },
});
