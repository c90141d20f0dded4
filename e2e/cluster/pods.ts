import type { CoreV1Api } from "@kubernetes/client-node";
import { expect } from "vitest";

export interface PodRun {
  namespace: string;
  image: string;
  command: string[];
  serviceAccountName?: string;
  /** The node to run on; the scheduler's choice when not given. */
  nodeName?: string;
}

/** Runs a command in a pod of its own to completion and returns its log; fails the test unless it succeeds. */
export async function runPod(core: CoreV1Api, run: PodRun): Promise<string> {
  const name = `e2e-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  await core.createNamespacedPod({
    namespace: run.namespace,
    body: {
      metadata: { name },
      spec: {
        serviceAccountName: run.serviceAccountName,
        automountServiceAccountToken: run.serviceAccountName !== undefined,
        restartPolicy: "Never",
        nodeName: run.nodeName,
        containers: [{ name: "run", image: run.image, imagePullPolicy: "IfNotPresent", command: run.command }],
      },
    },
  });
  try {
    await expect
      .poll(async () => (await core.readNamespacedPod({ name, namespace: run.namespace })).status?.phase, {
        timeout: 90_000,
        interval: 500,
      })
      .toMatch(/^(Succeeded|Failed)$/);
    const log = await core.readNamespacedPodLog({ name, namespace: run.namespace });
    const phase = (await core.readNamespacedPod({ name, namespace: run.namespace })).status?.phase;
    expect(phase, log).toBe("Succeeded");
    return log;
  } finally {
    await core.deleteNamespacedPod({ name, namespace: run.namespace, gracePeriodSeconds: 0 });
  }
}
