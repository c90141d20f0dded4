import {
  CLUSTER_DNS_IP,
  CLUSTER_DOMAIN,
  CLUSTER_POD_CIDR,
  CNI_BIN_DIR,
  CNI_NETWORK,
  type ClusterNode,
  PAUSE_IMAGE,
  POD_BRIDGE,
} from "./config.ts";
import { join } from "node:path";

// The configuration files of a node's components, as pure functions of the
// node (config.ts's clusterNode) and the cluster's constants.

/** containerd's configuration; `runcBinary` replaces runc where the machine needs a wrapper around it. */
export function containerdConfig(node: ClusterNode, runcBinary?: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${node.containerdRoot}"
state = "${node.containerdState}"

[grpc]
  address = "${node.containerdSocket}"

[${cri}]
  sandbox_image = "${PAUSE_IMAGE}"
  enable_selinux = false
  # A Block-mode volume's device, and a device plugin's (/dev/kvm), belong to the container's runAsUser/runAsGroup,
  # as KubeVirt asks of its nodes: the launcher runs as 107, not root, and the node's /dev/kvm is root's, 0600 (ADR 23).
  device_ownership_from_security_context = true

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false${runcBinary ? `\n  BinaryName = "${runcBinary}"` : ""}

[${cri}.cni]
  bin_dir = "${CNI_BIN_DIR}"
  conf_dir = "${node.cniConfDir}"
`;
}

/**
 * A node's pod network: one bridge, host-local addresses from the node's pod range, masquerade for traffic leaving it.
 */
export function cniConfig(node: ClusterNode): string {
  return `${JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: CNI_NETWORK,
      plugins: [
        {
          type: "bridge",
          bridge: POD_BRIDGE,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            ranges: [[{ subnet: node.podCidr, gateway: node.podGateway }]],
            routes: [{ dst: "0.0.0.0/0" }],
            dataDir: join(node.stateDir, "cni", "ipam"),
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export interface KubeletFiles {
  caFile: string;
  servingCert: string;
  servingKey: string;
}

export function kubeletConfig(node: ClusterNode, files: KubeletFiles): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node.ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${files.caFile}
authorization:
  mode: Webhook
tlsCertFile: ${files.servingCert}
tlsPrivateKeyFile: ${files.servingKey}
# PID 1 is not systemd here, and the cgroup v1 hierarchy is mounted.
cgroupDriver: cgroupfs
cgroupRoot: ${node.cgroupRoot}
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://${node.containerdSocket}
imageServiceEndpoint: unix://${node.containerdSocket}
# containerd 1.6 does not protect the locally provided pause image from image GC.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
clusterDomain: ${CLUSTER_DOMAIN}
clusterDNS: [${CLUSTER_DNS_IP}]
# The host's resolver is not the pods' business: they ask the cluster's DNS only.
resolvConf: ""
serializeImagePulls: false
`;
}

export function kubeProxyConfig(node: ClusterNode, kubeconfig: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${kubeconfig}
mode: iptables
clusterCIDR: ${CLUSTER_POD_CIDR}
hostnameOverride: ${node.name}
bindAddress: ${node.ip}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts answer on the node's address only, never on the machine's own interfaces.
nodePortAddresses: ["${node.ip}/32"]
# Leave the machine's conntrack settings as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`;
}
