import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnManaged } from "@kubevirt-ts/control-plane";
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, LOG_DIR, NODE_IP, STATE_DIR } from "./config.ts";
import { log, run } from "./exec.ts";

// The cluster's DNS, as a cluster's DNS add-on serves it: CoreDNS (built
// from its Go module) answers for Services and pods under cluster.local,
// behind the kube-dns Service in kube-system at CLUSTER_DNS_IP, the address
// every kubelet writes into its pods' resolv.conf. It runs as a host process
// on the node's address (as the storage provisioner does, ADR 13): the
// Service has no selector, and an EndpointSlice of ours names that address.
// Names outside the cluster get no answer: the machine reaches no resolver
// a test may use.

/** The user of CoreDNS's client certificate, whom its ClusterRole is bound to. */
export const COREDNS_USER = "kubevirt-ts:coredns";
const DNS_PORT = 53;
const ROLE = "kubevirt-ts:coredns";
/** Where CoreDNS says it is ready (it has read the API), on loopback. */
const READY_PORT = 18181;

/** CoreDNS's configuration: the cluster's zone and reverse zones from the API, on the node's address only. */
export function corefile(kubeconfig: string): string {
  return `${CLUSTER_DOMAIN}:${String(DNS_PORT)} in-addr.arpa:${String(DNS_PORT)} ip6.arpa:${String(DNS_PORT)} {
    bind ${NODE_IP}
    errors
    ready 127.0.0.1:${String(READY_PORT)}
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`;
}

/**
 * The objects behind the cluster's DNS: CoreDNS's rights (those of the add-on's system:coredns), the kube-dns Service
 * and its endpoints.
 */
export function dnsObjects(): object[] {
  const ports = [
    { name: "dns", port: DNS_PORT, protocol: "UDP" },
    { name: "dns-tcp", port: DNS_PORT, protocol: "TCP" },
  ];
  const labels = { "k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS" };
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: ROLE },
      rules: [
        { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: ROLE },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: ROLE },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: COREDNS_USER }],
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kube-dns", namespace: "kube-system", labels },
      spec: { clusterIP: CLUSTER_DNS_IP, ports },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "kube-dns-node",
        namespace: "kube-system",
        // Ours: the EndpointSlice controller leaves a slice alone that another manager names.
        labels: {
          ...labels,
          "kubernetes.io/service-name": "kube-dns",
          "endpointslice.kubernetes.io/managed-by": "local-cluster.kubevirt-ts.io",
        },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [NODE_IP], conditions: { ready: true } }],
      ports,
    },
  ];
}

/**
 * Installs the DNS's objects and starts CoreDNS. `kubectl` is the cluster's kubectl with the admin's kubeconfig flag;
 * `kubeconfig` is CoreDNS's own.
 */
export async function startDns(options: { binary: string; kubectl: string[]; kubeconfig: string }): Promise<void> {
  const [command = "kubectl", ...args] = options.kubectl;
  await run(
    command,
    [...args, "apply", "--server-side", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: dnsObjects() }),
  );
  const config = join(STATE_DIR, "Corefile");
  await writeFile(config, corefile(options.kubeconfig));
  log(
    `CoreDNS: ${CLUSTER_DOMAIN} at ${CLUSTER_DNS_IP} (the kube-dns Service), served on ${NODE_IP}:${String(DNS_PORT)}`,
  );
  spawnManaged({
    name: "coredns",
    command: options.binary,
    detached: true,
    logFile: join(LOG_DIR, "coredns.log"),
    args: ["-conf", config],
  });
}

/** Whether CoreDNS has read the API and answers: its ready endpoint. */
export async function dnsReady(): Promise<boolean> {
  const answer = await fetch(`http://127.0.0.1:${String(READY_PORT)}/ready`).then(
    (r) => r.status,
    () => 0,
  );
  return answer === 200;
}
