import { KubeConfig } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect } from "vitest";
import { apiResourceCheck } from "../src/index.ts";

// The custom resource the test API server serves (its fixture applies the project's CRDs).
const vmis = { group: "kubevirt.io", version: "v1", plural: "virtualmachineinstances", namespaced: true } as const;
const vmiCheck = (kubeConfig: KubeConfig) => apiResourceCheck(kubeConfig, vmis);

describe("apiResourceCheck", () => {
  test("passes against an API server that serves the CRDs", async ({ kubeConfig }) => {
    expect(await vmiCheck(kubeConfig)()).toBeUndefined();
  });

  test("needs no permission: an account without any role passes", async ({ kubeConfig, core, namespace }) => {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "no-roles" } } });
    const { status } = await core.createNamespacedServiceAccountToken({
      namespace,
      name: "no-roles",
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster || !status?.token) throw new Error("no cluster in the test kubeconfig, or no token issued");
    const unprivileged = new KubeConfig();
    unprivileged.loadFromClusterAndUser(cluster, { name: "no-roles", token: status.token });
    expect(await vmiCheck(unprivileged)()).toBeUndefined();
  });

  test("says which resource its group does not serve", async ({ kubeConfig }) => {
    const check = apiResourceCheck(kubeConfig, { ...vmis, plural: "virtualmachinesnapshots" });
    expect(await check()).toMatch(/ serves kubevirt.io\/v1 without virtualmachinesnapshots; apply the chart's CRDs$/);
  });

  test("says what it cannot reach", async () => {
    const unreachable = new KubeConfig();
    unreachable.loadFromClusterAndUser(
      { name: "nowhere", server: "https://127.0.0.1:1", skipTLSVerify: true },
      { name: "nobody" },
    );
    expect(await vmiCheck(unreachable)()).toMatch(
      /^cannot discover virtualmachineinstances.kubevirt.io\/v1 at https:\/\/127.0.0.1:1: /,
    );
  });
});
