// What the global setup hands to tests through vitest's provide/inject.
declare module "vitest" {
  export interface ProvidedContext {
    /** The admin kubeconfig of the control plane. */
    kubeconfig: string;
    kubeconfigPath: string;
    /** The folder with kubectl, etcd and kube-apiserver. */
    binDir: string;
    /** Files of the front proxy's client certificate, which the API server presents to aggregated API servers. */
    frontProxyClient: { cert: string; key: string };
  }
}

export {};
