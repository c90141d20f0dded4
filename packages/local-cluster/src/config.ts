import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";

// The addresses, names and places of the local cluster. Every address is in
// the benchmarking range 198.18.0.0/15, clear of the private ranges and of
// anything public.

export const NODE_NAME = "kubevirt-ts-node";
/** The node's address, on a bridge of its own that cluster-up creates. */
export const NODE_IP = "198.18.255.1";
export const NODE_BRIDGE = "kvts0";
export const NODE_PREFIX = 24;
/**
 * The dashboard's browser in the e2e suite runs in a network namespace of its own, joined to the node's bridge.
 * Chromium aborts every request in flight (ERR_NETWORK_CHANGED) when an address appears on any link it can see, and
 * on the node each new pod's veth is one; in its own namespace it sees only its link.
 */
export const BROWSER_NETNS = "kvts-browser";
export const BROWSER_IP = "198.18.255.250";
export const BROWSER_LINK = "kvts-browser0";
export const POD_CIDR = "198.18.0.0/24";
/** Every node's pods: node n has 198.18.(n-1).0/24 of it. */
export const CLUSTER_POD_CIDR = "198.18.0.0/20";
export const POD_GATEWAY = "198.18.0.1";
export const POD_BRIDGE = "kvts-cni0";
export const CNI_NETWORK = "kubevirt-ts";
/**
 * The cluster's DNS domain, and the kube-dns Service's address in SERVICE_CIDR (control-plane's), which pods are given
 * as their resolver.
 */
export const CLUSTER_DOMAIN = "cluster.local";
export const CLUSTER_DNS_IP = "198.19.0.10";
export const APISERVER_PORT = 6443;
export const ETCD_PORT = 2379;
export const ETCD_PEER_PORT = 2380;

/** Persistent state: etcd data, certificates, containerd's store. */
export const STATE_DIR = "/var/lib/kubevirt-ts";
/** Runtime state: sockets and containerd's task state. */
export const RUN_DIR = "/run/kubevirt-ts";
/** The kubelet keeps its default root so pods' volumes sit where KubeVirt-style host paths expect them. */
export const KUBELET_DIR = "/var/lib/kubelet";
export const CONTAINERD_SOCKET = join(RUN_DIR, "containerd", "containerd.sock");
export const CNI_BIN_DIR = "/usr/lib/cni";
export const CNI_CONF_DIR = join(STATE_DIR, "cni", "net.d");
/**
 * Where the local storage keeps its claims' folders on a node: with the cluster's state, so cluster-down removes them.
 */
export const LOCAL_PATH_DIR = join(STATE_DIR, "local-path");

/** Files for the developer: kubeconfig and one log per component. */
export const LOCAL_DIR = join(REPO_ROOT, ".local");
export const KUBECONFIG_PATH = join(LOCAL_DIR, "kubeconfig");
export const LOG_DIR = join(LOCAL_DIR, "logs");
/** The images cluster-sync installed, for tests to check against. */
export const IMAGES_FILE = join(LOCAL_DIR, "images.json");

/** The sandbox (pause) image containerd uses, provided locally. */
export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";

/** The most nodes cluster-up makes (NODES=n): each further node's pod range must fit in CLUSTER_POD_CIDR. */
export const MAX_NODES = 4;
/** The state of the nodes after the first, a folder each. */
export const NODES_DIR = join(STATE_DIR, "nodes");
export const NODES_RUN_DIR = join(RUN_DIR, "nodes");
/** Which nodes cluster-up made, for cluster-sync and cleanup to find them all. */
export const NODES_FILE = join(STATE_DIR, "nodes.json");

/**
 * A node of the local cluster. The first is the machine itself: its network, its mounts, the cgroup root. Every further
 * node is a kubelet, containerd and kube-proxy of its own in a network namespace (an address on the node bridge, its
 * own pod bridge and range) and a mount namespace, where its own folders stand in for the kubelet's root, the pods'
 * logs and the local storage: what is one node's there is not another's, as on separate machines.
 */
export interface ClusterNode {
  /** 1 for the first node. */
  index: number;
  name: string;
  ip: string;
  podCidr: string;
  podGateway: string;
  /** The folder of its own state: containerd's store, its configuration, its pod network's addresses. */
  stateDir: string;
  containerdSocket: string;
  containerdRoot: string;
  containerdState: string;
  cniConfDir: string;
  /** The cgroup its kubelet puts pods under. */
  cgroupRoot: string;
  /** Every node but the first: its network namespace and the file that holds its mount namespace. */
  namespaces?: { net: string; mountFile: string };
}

/** The folders a further node has of its own, bound over the machine's in its mount namespace. */
export const NODE_OWN_FOLDERS = [KUBELET_DIR, "/var/log/pods", "/var/log/containers", LOCAL_PATH_DIR] as const;

/** Where a further node keeps one of its own folders on the machine. */
export function ownFolder(node: ClusterNode, folder: (typeof NODE_OWN_FOLDERS)[number]): string {
  return join(node.stateDir, "own", folder.replaceAll("/", "_"));
}

/** Where a path as the node sees it is on the machine: inside a further node's own folders, the node's copy of it. */
export function machinePath(node: ClusterNode, path: string): string {
  if (!node.namespaces) return path;
  const folder = NODE_OWN_FOLDERS.find((f) => path === f || path.startsWith(`${f}/`));
  return folder === undefined ? path : join(ownFolder(node, folder), path.slice(folder.length));
}

export function clusterNode(index: number): ClusterNode {
  if (!Number.isInteger(index) || index < 1 || index > MAX_NODES)
    throw new Error(`a node's index is 1 to ${String(MAX_NODES)}, not ${String(index)}`);
  if (index === 1) {
    return {
      index,
      name: NODE_NAME,
      ip: NODE_IP,
      podCidr: POD_CIDR,
      podGateway: POD_GATEWAY,
      stateDir: STATE_DIR,
      containerdSocket: CONTAINERD_SOCKET,
      containerdRoot: join(STATE_DIR, "containerd"),
      containerdState: join(RUN_DIR, "containerd"),
      cniConfDir: CNI_CONF_DIR,
      cgroupRoot: "/",
    };
  }
  const name = `${NODE_NAME}-${String(index)}`;
  const stateDir = join(NODES_DIR, name);
  const runDir = join(NODES_RUN_DIR, name);
  return {
    index,
    name,
    ip: `198.18.255.${String(index)}`,
    podCidr: `198.18.${String(index - 1)}.0/24`,
    podGateway: `198.18.${String(index - 1)}.1`,
    stateDir,
    containerdSocket: join(runDir, "containerd.sock"),
    containerdRoot: join(stateDir, "containerd"),
    containerdState: join(runDir, "containerd"),
    cniConfDir: join(stateDir, "cni", "net.d"),
    cgroupRoot: `/${name}`,
    namespaces: { net: `kvts-node${String(index)}`, mountFile: join(NODES_RUN_DIR, "mnt", name) },
  };
}

export function clusterNodes(count: number): ClusterNode[] {
  return Array.from({ length: count }, (_, i) => clusterNode(i + 1));
}

/** The nodes cluster-up made (it records them in NODES_FILE); the first node alone when it recorded none. */
export async function readClusterNodes(): Promise<ClusterNode[]> {
  const recorded = await readFile(NODES_FILE, "utf8").catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  });
  return recorded === undefined ? clusterNodes(1) : (JSON.parse(recorded) as ClusterNode[]);
}
