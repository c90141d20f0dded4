import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { fileURLToPath } from "node:url";
import { expect, inject, it, test as base } from "vitest";
import { inheritedEnv } from "./env.ts";
import { Pki } from "./pki.ts";
import { freePort } from "./ports.ts";
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
    // What kube-controller-manager does in a cluster; the test control plane runs none, and pods need this account.
    await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: "default" } } });
    await use(name);
    await core.deleteNamespace({ name });
  },
});

/**
 * A folder as a Kubernetes TLS Secret mounts it (ca.crt, tls.crt, tls.key):
 * a certificate for commonName, signed by a CA of its own.
 */
export async function tlsSecretDir(commonName: string, usage: "server" | "client", hosts?: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tls-"));
  const pki = new Pki(dir);
  await pki.createCa(`${commonName}-ca`); // ca.crt
  const pair = await pki.issue({ name: "issued", commonName, usage, hosts });
  await copyFile(pair.cert, join(dir, "tls.crt"));
  await copyFile(pair.key, join(dir, "tls.key"));
  return dir;
}

export interface ServiceProcess {
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** GETs a path of its operations endpoint; resolves with the status code (0 when unreachable). */
  probe(path: string): Promise<number>;
  /** Sends SIGTERM and resolves with the exit code. */
  terminate(): Promise<number | null>;
}

/**
 * Starts a service's main module as its own Node process with the test
 * control plane's kubeconfig, the way it runs in a pod.
 */
export async function startServiceProcess(entry: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const dir = await mkdtemp(join(tmpdir(), "kubevirt-ts-service-"));
  const kubeconfigPath = join(dir, "kubeconfig");
  await writeFile(kubeconfigPath, inject("kubeconfig"));
  const opsPort = await freePort();
  const child = spawn(process.execPath, [entry], {
    env: { ...inheritedEnv(), KUBECONFIG: kubeconfigPath, OPS_PORT: String(opsPort), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = once(child, "exit").then(([code]) => code as number | null);
  return {
    output: () => output,
    probe: async (path) => {
      try {
        return (await fetch(`http://127.0.0.1:${opsPort}${path}`)).status;
      } catch {
        return 0;
      }
    },
    terminate: async () => {
      child.kill("SIGTERM");
      const code = await exited;
      await rm(dir, { recursive: true, force: true });
      return code;
    },
  };
}

/**
 * The test every service's main module passes: as its own process it becomes
 * ready, serves its probes, and exits 0 on SIGTERM after stopping its work.
 */
export function itRunsAsAService(
  entry: URL,
  readiness = "becomes ready",
  env: Record<string, string> | (() => Promise<Record<string, string>>) = {},
): void {
  it(`${readiness}, serves its probes and exits 0 on SIGTERM`, async () => {
    const service = await startServiceProcess(fileURLToPath(entry), typeof env === "function" ? await env() : env);
    await expect.poll(() => service.probe("/readyz"), { timeout: 30_000 }).toBe(200);
    expect(await service.probe("/healthz")).toBe(200);
    // /metrics is kept to callers allowed to get it (metrics.requireAuthorization, on by default): no token, 401.
    expect(await service.probe("/metrics")).toBe(401);
    expect(await service.terminate(), service.output()).toBe(0);
    expect(service.output()).toContain('"msg":"stopped"');
  });
}
