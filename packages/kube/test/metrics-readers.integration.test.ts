import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect } from "vitest";
import { KubeClient, METRICS_READER_ROLE, metricsReaders } from "../src/index.ts";

// A component's /metrics as kube-rbac-proxy guards it: only a token the API
// server accepts, of a user allowed to get /metrics, reads it.

async function accountToken(core: CoreV1Api, namespace: string, name: string): Promise<string> {
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const { status } = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  if (!status?.token) throw new Error("the API server issued no token");
  return status.token;
}

/**
 * The chart's ClusterRole (charts/kubevirt-ts/templates/metrics-reader.yaml), bound to one account of the test's
 * namespace.
 */
async function allowMetrics(kubeConfig: KubeConfig, namespace: string, account: string): Promise<() => Promise<void>> {
  const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const role = `${METRICS_READER_ROLE}-${namespace}`;
  await rbac.createClusterRole({
    body: { metadata: { name: role }, rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }] },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: role },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "ServiceAccount", name: account, namespace }],
    },
  });
  return async () => {
    await rbac.deleteClusterRoleBinding({ name: role });
    await rbac.deleteClusterRole({ name: role });
  };
}

describe("metricsReaders", () => {
  test("lets in a token allowed to get /metrics, and refuses none, an unknown one and one not allowed", async ({
    kubeConfig,
    core,
    namespace,
  }) => {
    const prometheus = await accountToken(core, namespace, "prometheus");
    const tenant = await accountToken(core, namespace, "tenant");
    const disallow = await allowMetrics(kubeConfig, namespace, "prometheus");
    try {
      const access = metricsReaders(() => KubeClient.fromKubeConfig(kubeConfig));
      // RBAC's authorizer sees a new binding within moments: a fresh access each time, so that no refusal is kept.
      await expect
        .poll(() => metricsReaders(() => KubeClient.fromKubeConfig(kubeConfig))(`Bearer ${prometheus}`), {
          timeout: 10_000,
        })
        .toBeUndefined();
      expect(await access(`Bearer ${prometheus}`)).toBeUndefined();
      expect(await access(`Bearer ${tenant}`)).toEqual({
        status: 403,
        reason:
          `system:serviceaccount:${namespace}:tenant may not get /metrics: bind it to ` +
          `the ClusterRole ${METRICS_READER_ROLE}`,
      });
      expect(await access("Bearer not-a-token")).toEqual({
        status: 401,
        reason: expect.stringMatching(/does not accept this token/) as string,
      });
      expect(await access(undefined)).toEqual({
        status: 401,
        reason: expect.stringMatching(/needs a bearer token/) as string,
      });
    } finally {
      await disallow();
    }
  });

  test("keeps a decision: the same token is reviewed once a minute, not once a scrape", async ({
    kubeConfig,
    core,
    namespace,
  }) => {
    const prometheus = await accountToken(core, namespace, "prometheus");
    let clients = 0;
    let requests = 0;
    const counted = async () => {
      clients += 1;
      return KubeClient.fromKubeConfig(kubeConfig, {
        observe: () => {
          requests += 1;
        },
      });
    };
    const access = metricsReaders(counted);
    const answers = await Promise.all(Array.from({ length: 20 }, () => access(`Bearer ${prometheus}`)));
    expect(answers.every((a) => a?.status === 403)).toBe(true);
    expect(await access(`Bearer ${prometheus}`)).toEqual(answers[0]);
    // One TokenReview and one SubjectAccessReview for 21 asks.
    expect([clients, requests]).toEqual([1, 2]);
  });
});
