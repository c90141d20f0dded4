import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect } from "vitest";
import { ApiError, KubeClient, type KubeObject, resources } from "../src/index.ts";

// A service's client reads its service-account token from a file, as in a pod,
// and keeps working when the kubelet replaces the token and the old one is revoked.

interface SelfSubjectReview extends KubeObject {
  status?: { userInfo?: { username?: string } };
}

const review = (): SelfSubjectReview => ({
  apiVersion: "authentication.k8s.io/v1",
  kind: "SelfSubjectReview",
  metadata: {},
});

async function whoAmI(client: KubeClient): Promise<string | undefined> {
  const answer = await client.create<SelfSubjectReview>(resources.selfSubjectReviews, undefined, review());
  return answer.status?.userInfo?.username;
}

/** A token of the account bound to a Secret of its own: deleting the Secret revokes the token at once. */
async function boundToken(core: CoreV1Api, namespace: string, account: string, secret: string): Promise<string> {
  const { metadata } = await core.createNamespacedSecret({ namespace, body: { metadata: { name: secret } } });
  const { status } = await core.createNamespacedServiceAccountToken({
    namespace,
    name: account,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: "v1", kind: "Secret", name: secret, uid: metadata?.uid },
      },
    },
  });
  if (!status?.token) throw new Error("the API server issued no token");
  return status.token;
}

async function refusal(call: Promise<unknown>): Promise<number | string> {
  try {
    await call;
    return "accepted";
  } catch (error) {
    return error instanceof ApiError ? error.code : String(error);
  }
}

describe("a client whose credentials are a token file", () => {
  test("keeps working after its first token is revoked, once the file holds a new one", async ({
    kubeConfig,
    core,
    namespace,
  }) => {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "rotating" } } });
    const first = await boundToken(core, namespace, "rotating", "first");
    const second = await boundToken(core, namespace, "rotating", "second");
    const dir = await mkdtemp(join(tmpdir(), "token-file-"));
    try {
      const file = join(dir, "token");
      await writeFile(file, first);
      const cluster = kubeConfig.getCurrentCluster();
      if (!cluster) throw new Error("no cluster in the test kubeconfig");
      const inPod = new KubeConfig();
      // What KubeConfig.loadFromCluster() makes of a pod's service account.
      inPod.loadFromClusterAndUser(cluster, {
        name: "rotating",
        authProvider: { name: "tokenFile", config: { tokenFile: file } },
      });
      const client = await KubeClient.fromKubeConfig(inPod);
      const username = `system:serviceaccount:${namespace}:rotating`;
      expect(await whoAmI(client)).toBe(username);

      // The kubelet writes the new token beside the file and renames it over, as with a projected volume.
      await writeFile(join(dir, "token.new"), second);
      await rename(join(dir, "token.new"), file);
      await core.deleteNamespacedSecret({ namespace, name: "first" });
      // The first token is refused now: a client that never read the file again would get this 401.
      const withFirst = client.withBearerToken(first);
      await expect.poll(() => refusal(whoAmI(withFirst)), { timeout: 30_000 }).toBe(401);

      // Within the minute it would still use the first token: the 401 makes it read the file and send again.
      expect(await whoAmI(client)).toBe(username);
      expect(await whoAmI(client)).toBe(username);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("says which file it cannot read when there is no token yet", async ({ kubeConfig }) => {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("no cluster in the test kubeconfig");
    const dir = await mkdtemp(join(tmpdir(), "token-file-"));
    try {
      const file = join(dir, "token");
      await writeFile(file, "not-a-token");
      const inPod = new KubeConfig();
      inPod.loadFromClusterAndUser(cluster, {
        name: "gone",
        authProvider: { name: "tokenFile", config: { tokenFile: file } },
      });
      const client = await KubeClient.fromKubeConfig(inPod);
      await rm(file);
      await expect(whoAmI(client)).rejects.toThrow(`cannot read the service-account token file ${file}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
