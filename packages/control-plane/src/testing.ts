import { randomBytes } from "node:crypto";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { inject, test as base } from "vitest";
import "./provided-context.ts";

// Fixtures for integration tests against the control plane of vitest-setup.ts:
// an admin client, and a namespace of their own for each test.

export interface KubeFixtures {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  /** A namespace created for this test alone. */
  namespace: string;
}

export const test = base.extend<KubeFixtures>({
  // eslint-disable-next-line no-empty-pattern -- vitest requires a destructuring pattern here
  kubeConfig: async ({}, use) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(inject("kubeconfig"));
    await use(kubeConfig);
  },
  core: async ({ kubeConfig }, use) => {
    await use(kubeConfig.makeApiClient(CoreV1Api));
  },
  custom: async ({ kubeConfig }, use) => {
    await use(kubeConfig.makeApiClient(CustomObjectsApi));
  },
  namespace: async ({ core }, use) => {
    const name = `test-${randomBytes(4).toString("hex")}`;
    await core.createNamespace({ body: { metadata: { name } } });
    await use(name);
    await core.deleteNamespace({ name });
  },
});
