import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";

// The addresses, names and places of the local single-node cluster. Every
// address is in the benchmarking range 198.18.0.0/15, clear of the private
// ranges and of anything public.

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
export const POD_GATEWAY = "198.18.0.1";
export const POD_BRIDGE = "kvts-cni0";
export const CNI_NETWORK = "kubevirt-ts";
/** The cluster's DNS domain, and the kube-dns Service's address in SERVICE_CIDR (control-plane's), which pods are given as their resolver. */
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

/** Files for the developer: kubeconfig and one log per component. */
export const LOCAL_DIR = join(REPO_ROOT, ".local");
export const KUBECONFIG_PATH = join(LOCAL_DIR, "kubeconfig");
export const LOG_DIR = join(LOCAL_DIR, "logs");
/** The images cluster-sync installed, for tests to check against. */
export const IMAGES_FILE = join(LOCAL_DIR, "images.json");

/** The sandbox (pause) image containerd uses, provided locally. */
export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";
