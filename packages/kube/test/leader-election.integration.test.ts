import { KubeConfig } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { describe, expect, inject } from "vitest";
import { KubeClient, LeaderElector } from "../src/index.ts";

const log = createLogger({ component: "leader-election-test", level: "error" });

async function client(): Promise<KubeClient> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  return KubeClient.fromKubeConfig(kubeConfig);
}

function candidate(kube: KubeClient, namespace: string, identity: string) {
  const elector = new LeaderElector({
    client: kube,
    log,
    namespace,
    name: "test-lease",
    identity,
    leaseDurationMs: 2_000,
    renewDeadlineMs: 1_500,
    retryPeriodMs: 200,
  });
  const stop = new AbortController();
  let leading = false;
  const done = elector.run(
    {
      onStartedLeading: (signal) =>
        new Promise<void>((resolve) => {
          leading = true;
          signal.addEventListener(
            "abort",
            () => {
              leading = false;
              resolve();
            },
            { once: true },
          );
        }),
    },
    stop.signal,
  );
  return {
    isLeading: () => leading,
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

describe("leader election on a Lease", () => {
  test("elects one of two candidates, and the other takes over when the leader stops", async ({ namespace }) => {
    const kube = await client();
    const a = candidate(kube, namespace, "a");
    await expect.poll(() => a.isLeading(), { timeout: 10_000 }).toBe(true);
    const b = candidate(kube, namespace, "b");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect([a.isLeading(), b.isLeading()]).toEqual([true, false]);

    await a.stop();
    // The leader gives the lease up as it stops, so the other need not wait for it to expire.
    await expect.poll(() => b.isLeading(), { timeout: 5_000 }).toBe(true);
    await b.stop();
  });
});
