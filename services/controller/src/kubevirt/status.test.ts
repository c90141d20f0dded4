import type { KubeVirt } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type ComponentWorkload, kubeVirtStatus } from "./status.ts";

const now = new Date("2026-01-01T00:00:00Z");
const kv = (status?: KubeVirt["status"]): KubeVirt => ({
  apiVersion: "kubevirt.io/v1",
  kind: "KubeVirt",
  metadata: { name: "kubevirt-ts", namespace: "kubevirt-ts", generation: 3 },
  spec: { configuration: {} },
  ...(status ? { status } : {}),
});
const deployment = (name: string, available: number, replicas = 2, updated = replicas): ComponentWorkload => ({
  metadata: { name, generation: 1 },
  spec: { replicas },
  status: { observedGeneration: 1, replicas, updatedReplicas: updated, availableReplicas: available },
});
const daemonSet = (available: number, desired = 2): ComponentWorkload => ({
  metadata: { name: "virt-handler", generation: 1 },
  status: {
    observedGeneration: 1,
    desiredNumberScheduled: desired,
    updatedNumberScheduled: desired,
    numberAvailable: available,
  },
});
const all = (api: ComponentWorkload, handler: ComponentWorkload) =>
  new Map([
    ["virt-api", api],
    ["virt-controller", deployment("virt-controller", 2)],
    ["virt-handler", handler],
  ]);
const condition = (s: KubeVirt["status"], type: string) => s?.conditions?.find((c) => c.type === type);

describe("the KubeVirt CR's status", () => {
  it("is Deployed and Available when every component is, with the generation and version it saw", () => {
    const status = kubeVirtStatus(kv(), all(deployment("virt-api", 2), daemonSet(2)), "0.1.0", now);
    expect(status).toMatchObject({
      phase: "Deployed",
      observedGeneration: 3,
      observedKubeVirtVersion: "0.1.0",
      defaultArchitecture: "amd64",
    });
    expect(condition(status, "Available")).toMatchObject({ status: "True", reason: "AllComponentsReady" });
    expect(condition(status, "Progressing")?.status).toBe("False");
    expect(condition(status, "Degraded")?.status).toBe("False");
  });

  it("is Deploying while a component has nothing available yet, naming it", () => {
    const status = kubeVirtStatus(kv(), all(deployment("virt-api", 0), daemonSet(2)), "0.1.0", now);
    expect(status.phase).toBe("Deploying");
    expect(condition(status, "Available")).toMatchObject({
      status: "False",
      message: "virt-api: 0 of 2 replicas available.",
    });
    expect(condition(status, "Degraded")?.status).toBe("False");
  });

  it("is Progressing during a rollout, and Degraded once deployed when a node's handler is down", () => {
    const rolling = kubeVirtStatus(
      kv({ phase: "Deployed" }),
      all(deployment("virt-api", 2, 2, 1), daemonSet(2)),
      "0.1.0",
      now,
    );
    expect(condition(rolling, "Progressing")?.status).toBe("True");
    expect(condition(rolling, "Available")?.status).toBe("True");
    const degraded = kubeVirtStatus(
      kv({ phase: "Deployed" }),
      all(deployment("virt-api", 2), daemonSet(1)),
      "0.1.0",
      now,
    );
    expect(degraded.phase).toBe("Deployed");
    expect(condition(degraded, "Degraded")).toMatchObject({
      status: "True",
      message: "virt-handler: 1 of 2 nodes available.",
    });
  });

  it("is not Available with a component missing", () => {
    const status = kubeVirtStatus(kv(), new Map([["virt-api", deployment("virt-api", 2)]]), "0.1.0", now);
    expect(condition(status, "Available")?.message).toBe(
      "virt-controller is not deployed; virt-handler is not deployed.",
    );
  });
});
