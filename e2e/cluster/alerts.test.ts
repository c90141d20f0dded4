import type { StartedPrometheus } from "@kubevirt-ts/control-plane";
import { NAMESPACE } from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apps } from "./cluster.ts";
import { alertState, startClusterPrometheus } from "./prometheus.ts";

// KubeVirt's alerts as the chart ships them, evaluated by a real Prometheus
// on the cluster's live series (./prometheus.ts): the components are found
// and scraped, and taking virt-controller away fires VirtControllerDown, which
// clears once it is back.

const poll = { timeout: 180_000, interval: 2_000 };
const CONTROLLER = "virt-controller";

let prometheus: StartedPrometheus | undefined;

function started(): StartedPrometheus {
  if (!prometheus) throw new Error("Prometheus did not start");
  return prometheus;
}

/** The value of a query that answers one sample, or undefined when it answers none. */
const value = async (expr: string): Promise<number | undefined> => {
  const [sample] = await started().query(expr);
  return sample === undefined ? undefined : Number(sample.value[1]);
};

const controller = () => apps.readNamespacedDeployment({ name: CONTROLLER, namespace: NAMESPACE });

async function scaleController(replicas: number): Promise<void> {
  await apps.replaceNamespacedDeploymentScale({
    name: CONTROLLER,
    namespace: NAMESPACE,
    body: { metadata: { name: CONTROLLER, namespace: NAMESPACE }, spec: { replicas } },
  });
}

beforeAll(async () => {
  prometheus = await startClusterPrometheus();
});

afterAll(async () => {
  await prometheus?.stop();
});

describe("KubeVirt's alerts on the live cluster", () => {
  it("scrapes every component pod and fires VirtControllerDown while virt-controller is scaled to 0", async () => {
    const replicas = (await controller()).spec?.replicas ?? 1;
    // Every component pod scraped, none refused: each up is 1 (a refused token would read 0).
    await expect
      .poll(
        async () => ({
          controllers: await value("kubevirt_virt_controller_up"),
          refused: await value(`count(up{namespace="${NAMESPACE}"} == 0) or vector(0)`),
        }),
        poll,
      )
      .toEqual({ controllers: replicas, refused: 0 });
    expect(await value("kubevirt_virt_api_up")).toBeGreaterThanOrEqual(1);
    expect(await value("kubevirt_virt_handler_up")).toBeGreaterThanOrEqual(1);
    // Every alert's `for:` is dropped here, so a scrape that failed as Prometheus started (a pod that an earlier test
    // restarted) fires it at once; it clears at the next evaluation that reads the controllers up.
    await expect.poll(() => alertState(started(), "VirtControllerDown"), poll).toBe("inactive");

    await scaleController(0);
    try {
      await expect.poll(() => alertState(started(), "VirtControllerDown"), poll).toBe("firing");
      const firing = (await started().alerts()).find((a) => a.labels.alertname === "VirtControllerDown");
      // KubeVirt's labels, so routes written for KubeVirt's alert apply.
      expect(firing?.labels).toMatchObject({
        severity: "critical",
        operator_health_impact: "critical",
        kubernetes_operator_part_of: "kubevirt",
      });
    } finally {
      await scaleController(replicas);
    }
    await expect.poll(async () => (await controller()).status?.readyReplicas ?? 0, poll).toBe(replicas);
    await expect.poll(() => alertState(started(), "VirtControllerDown"), poll).toBe("inactive");
    // Each pod back is scraped at its next interval: the alert may clear on the first before the second is read.
    await expect.poll(() => value("kubevirt_virt_controller_up"), poll).toBe(replicas);
  });
});
