import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import type { ResourceType } from "./resources.ts";

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
 * A readiness check: passes when the API server answers and serves the
 * resource (of a named API group, such as a custom resource whose CRD must be
 * installed). It asks API discovery, which every signed-in account may read,
 * so it needs no permission on the resource itself.
 */
export function apiResourceCheck(kubeConfig: KubeConfig, type: ResourceType): () => Promise<string | undefined> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const server = kubeConfig.getCurrentCluster()?.server ?? "(no server configured)";
  const { group, version, plural } = type;
  return async () => {
    try {
      const list = await api.getAPIResources({ group, version });
      return list.resources.some((r) => r.name === plural)
        ? undefined
        : `${server} serves ${group}/${version} without ${plural}; apply the chart's CRDs`;
    } catch (error) {
      return `cannot discover ${plural}.${group}/${version} at ${server}: ${describeError(error)}`;
    }
  };
}
