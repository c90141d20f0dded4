import type { V1ObjectMeta, V1Pod } from "@kubernetes/client-node";
import { runPod } from "../pods.ts";
import type { Tenant } from "./tenants.ts";
import { until } from "./victim.ts";

// Pods the attacker makes in its own namespace, with its own token: servers
// that stay up while an attack runs, and Node scripts run to completion.

/** Makes a pod that serves until deleted, and waits until it runs; its address. */
export async function servingPod(
  attacker: Tenant,
  name: string,
  image: string,
  command: string[],
  metadata: Omit<V1ObjectMeta, "name"> = {},
): Promise<string> {
  const body: V1Pod = {
    metadata: { ...metadata, name },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      containers: [{ name: "serve", image, imagePullPolicy: "IfNotPresent", command }],
    },
  };
  await attacker.core.createNamespacedPod({ namespace: attacker.namespace, body });
  let ip = "";
  await until(
    async () => {
      const pod = await attacker.core.readNamespacedPod({ namespace: attacker.namespace, name });
      if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded")
        throw new Error(
          `the attacker's pod ${name} ended: ${JSON.stringify(pod.status.containerStatuses?.[0]?.state)}`,
        );
      ip = pod.status?.phase === "Running" ? (pod.status.podIP ?? "") : "";
      return ip !== "";
    },
    120_000,
    `the attacker's pod ${name} was not running`,
  );
  return ip;
}

/** Runs a Node script in a pod of the attacker's (an image with Node) and returns the JSON lines it printed. */
export async function nodeScript<T>(attacker: Tenant, image: string, lines: string[]): Promise<T[]> {
  const log = await runPod(attacker.core, {
    namespace: attacker.namespace,
    image,
    command: ["node", "-e", lines.join("\n")],
  });
  return log
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as T);
}
