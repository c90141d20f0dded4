import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, CNI_BIN_DIR, CNI_CONF_DIR, CNI_NETWORK, CONTAINERD_SOCKET, NODE_IP, NODE_NAME, PAUSE_IMAGE, POD_BRIDGE, POD_CIDR, POD_GATEWAY, RUN_DIR, STATE_DIR } from "./config.ts";
import { join } from "node:path";

// The configuration files of the node's components, as pure functions of the
// cluster's constants and file locations.

/** containerd's configuration; `runcBinary` replaces runc where the machine needs a wrapper around it. */
export function containerdConfig(runcBinary?: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${join(STATE_DIR, "containerd")}"
state = "${join(RUN_DIR, "containerd")}"

[grpc]
  address = "${CONTAINERD_SOCKET}"

[${cri}]
  sandbox_image = "${PAUSE_IMAGE}"
  enable_selinux = false
  # A Block-mode volume's device belongs to the container's runAsUser/runAsGroup, as KubeVirt asks of its nodes:
  # the launcher runs as 107, not root.
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
  conf_dir = "${CNI_CONF_DIR}"
`;
}

/** The pod network: one bridge, host-local addresses from POD_CIDR, masquerade for traffic leaving it. */
export function cniConfig(): string {
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
            ranges: [[{ subnet: POD_CIDR, gateway: POD_GATEWAY }]],
            routes: [{ dst: "0.0.0.0/0" }],
            dataDir: join(STATE_DIR, "cni", "ipam"),
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

export function kubeletConfig(files: KubeletFiles): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
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
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://${CONTAINERD_SOCKET}
imageServiceEndpoint: unix://${CONTAINERD_SOCKET}
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

export function kubeProxyConfig(kubeconfig: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${kubeconfig}
mode: iptables
clusterCIDR: ${POD_CIDR}
hostnameOverride: ${NODE_NAME}
bindAddress: ${NODE_IP}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts answer on the node's address only, never on the machine's own interfaces.
nodePortAddresses: ["${NODE_IP}/32"]
# Leave the machine's conntrack settings as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`;
}
