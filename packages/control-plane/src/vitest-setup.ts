import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import type { TestProject } from "vitest/node";
import { type ControlPlane, startControlPlane } from "./control-plane.ts";
import { installCrds } from "./crds.ts";
import { CHART_CRD_DIR, CHART_OPTIONAL_CRD_DIR, ensureBinaries } from "./paths.ts";
import "./provided-context.ts";

// Vitest global setup: a real etcd and kube-apiserver for the integration
// tests of a package, with the generated CRDs installed. Tests receive the
// admin kubeconfig through `inject("kubeconfig")` (see testing.ts).

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const binDir = await ensureBinaries();
  const dir = await mkdtemp(join(tmpdir(), "kubevirt-ts-control-plane-"));
  let controlPlane: ControlPlane | undefined;
  const teardown = async () => {
    await controlPlane?.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    controlPlane = await startControlPlane({ dir, binDir });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(controlPlane.kubeconfig);
    await installCrds(kubeConfig, CHART_CRD_DIR);
    await installCrds(kubeConfig, CHART_OPTIONAL_CRD_DIR);
  } catch (error) {
    await teardown();
    throw error;
  }
  project.provide("kubeconfig", controlPlane.kubeconfig);
  project.provide("kubeconfigPath", controlPlane.kubeconfigPath);
  project.provide("binDir", binDir);
  project.provide("frontProxyClient", controlPlane.certificates.frontProxy.client);
  return teardown;
}
