import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { GROUP, Resource, VERSION } from "@kubevirt-ts/kubevirt-api";

/**
 * Credentials as every Kubernetes client finds them: $KUBECONFIG or
 * ~/.kube/config outside a cluster, the pod's service account inside one.
 */
export function loadKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}

function describeError(error: unknown): string {
  if (typeof error === "object" && error !== null && "code" in error) {
    const { code, body } = error as { code: unknown; body: unknown };
    const message = typeof body === "string" ? body.slice(0, 200) : JSON.stringify(body).slice(0, 200);
    return `HTTP ${String(code)}: ${message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * A readiness check: passes when the API server answers and serves
 * kubevirt.io/v1 VirtualMachineInstances (the CRDs are installed and this
 * process may list them).
 */
export function kubevirtApiCheck(kubeConfig: KubeConfig): () => Promise<string | undefined> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const server = kubeConfig.getCurrentCluster()?.server ?? "(no server configured)";
  return async () => {
    try {
      await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: Resource.VirtualMachineInstance.plural, limit: 1 });
      return undefined;
    } catch (error) {
      return `cannot list ${Resource.VirtualMachineInstance.plural}.${GROUP} at ${server}: ${describeError(error)}`;
    }
  };
}
