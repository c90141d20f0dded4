import { chmod, copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { spawnManaged } from "@kubevirt-ts/control-plane";
import {
  CNI_NETWORK,
  type ClusterNode,
  LOG_DIR,
  NODE_BRIDGE,
  NODE_IP,
  NODE_OWN_FOLDERS,
  NODE_PREFIX,
  STATE_DIR,
  ownFolder,
} from "./config.ts";
import { log, run, tryRun } from "./exec.ts";
import { importPauseImage } from "./images.ts";
import { cniConfig, containerdConfig, kubeProxyConfig, kubeletConfig } from "./node-config.ts";

// One node of the local cluster: its containerd, kubelet and kube-proxy, and,
// for every node but the first, the namespaces that make it a machine of its
// own (config.ts's ClusterNode). The control plane, DNS and storage are the
// cluster's, started once (up.ts).

/**
 * What a node's components are given: the binaries' folder and the kubeconfigs and certificates cluster-up made for it.
 */
export interface NodeCredentials {
  binDir: string;
  caFile: string;
  kubeletKubeconfig: string;
  kubeProxyKubeconfig: string;
  servingCert: string;
  servingKey: string;
  /** The runc every node's containerd uses (runcBinary), found once for the machine. */
  runc: string | undefined;
}

/** A command as it runs on the node: in the node's namespaces, when it has its own. */
export function onNode(node: ClusterNode, command: string, args: string[]): [string, string[]] {
  if (!node.namespaces) return [command, args];
  return [
    "nsenter",
    [`--mount=${node.namespaces.mountFile}`, `--net=/run/netns/${node.namespaces.net}`, "--", command, ...args],
  ];
}

/** Writes a kernel setting inside the node's network namespace (forwarding, bridge netfilter are per namespace). */
async function netnsSetting(netns: string, key: string, value: string): Promise<void> {
  await run("ip", ["netns", "exec", netns, "sysctl", "-q", "-w", `${key}=${value}`]);
}

/**
 * A further node's namespaces: a network namespace on the node bridge with the node's address, routes both ways to
 * its pod range, and a mount namespace (held by a file) where the node's own folders stand over the machine's.
 */
async function makeNodeNamespaces(node: ClusterNode): Promise<void> {
  if (!node.namespaces) return;
  const { net, mountFile } = node.namespaces;
  await run("ip", ["netns", "add", net]);
  // The host's end of the link is named after the namespace, so cleanup finds it by its name.
  await run("ip", ["link", "add", net, "type", "veth", "peer", "name", "eth0", "netns", net]);
  await run("ip", ["link", "set", net, "master", NODE_BRIDGE, "up"]);
  const inNetns = ["netns", "exec", net, "ip"];
  await run("ip", [...inNetns, "addr", "add", `${node.ip}/${String(NODE_PREFIX)}`, "dev", "eth0"]);
  await run("ip", [...inNetns, "link", "set", "eth0", "up"]);
  await run("ip", [...inNetns, "link", "set", "lo", "up"]);
  await run("ip", [...inNetns, "route", "add", "default", "via", NODE_IP]);
  // The machine routes the node's pod range to the node; the other nodes' ranges go through the machine.
  await run("ip", ["route", "add", node.podCidr, "via", node.ip, "dev", NODE_BRIDGE]);
  await netnsSetting(net, "net.ipv4.ip_forward", "1");
  await netnsSetting(net, "net.bridge.bridge-nf-call-iptables", "1");

  // A mount namespace outlives its processes while a file holds it; that file must be on a private mount.
  const holder = dirname(mountFile);
  await mkdir(holder, { recursive: true });
  if ((await tryRun("findmnt", ["--mountpoint", holder])) === undefined) {
    await run("mount", ["--bind", holder, holder]);
    await run("mount", ["--make-private", holder]);
  }
  await writeFile(mountFile, "");
  // Slave: mounts the machine makes later (network namespaces' files) reach the node; the node's own stay on it.
  await run("unshare", [`--mount=${mountFile}`, "--propagation", "slave", "true"]);
  for (const folder of NODE_OWN_FOLDERS) {
    const own = ownFolder(node, folder);
    await mkdir(own, { recursive: true });
    await mkdir(folder, { recursive: true });
    await run("nsenter", [`--mount=${mountFile}`, "--", "mount", "--bind", own, folder]);
    // Shared, as a node's kubelet root must be for pods' mounts to reach containers that ask for them (the handler's
    // HostToContainer).
    await run("nsenter", [`--mount=${mountFile}`, "--", "mount", "--make-rshared", folder]);
  }
}

/** The cgroup a further node's kubelet puts pods under must exist before it starts, in every hierarchy. */
async function makeCgroupRoot(node: ClusterNode): Promise<void> {
  if (node.cgroupRoot === "/") return;
  const mounts = await readFile("/proc/self/mountinfo", "utf8");
  const hierarchies = mounts
    .split("\n")
    .map((line) => line.split(" "))
    .filter((fields) => fields.includes("cgroup") || fields.includes("cgroup2"))
    .map((fields) => fields[4] ?? "")
    .filter((point) => point.startsWith("/sys/fs/cgroup/"));
  for (const hierarchy of hierarchies) await mkdir(join(hierarchy, node.cgroupRoot), { recursive: true });
}

const CAP_SYS_RESOURCE = 24;

/** The runc containerd uses: a wrapper when root may not lower OOM scores (see files/runc-oom-clamp). */
export async function runcBinary(): Promise<string | undefined> {
  const status = await readFile("/proc/self/status", "utf8");
  const effective = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1] ?? "0"}`);
  if ((effective >> BigInt(CAP_SYS_RESOURCE)) & 1n) return undefined;
  log("root lacks CAP_SYS_RESOURCE here: runc goes through a wrapper that raises negative OOM scores to 0");
  const wrapper = join(STATE_DIR, "runc-oom-clamp");
  await copyFile(new URL("../files/runc-oom-clamp", import.meta.url), wrapper);
  await chmod(wrapper, 0o755);
  return wrapper;
}

function logName(node: ClusterNode, component: string): string {
  return join(LOG_DIR, node.index === 1 ? `${component}.log` : `${component}-${node.name}.log`);
}

/** Starts the node's containerd, kubelet and kube-proxy; resolves once containerd answers and holds the pause image. */
export async function startNode(
  node: ClusterNode,
  credentials: NodeCredentials,
  waitFor: (what: string, timeoutMs: number, check: () => Promise<boolean>) => Promise<void>,
): Promise<void> {
  log(
    `node ${node.name}: ${node.ip}, ` +
      `pods ${node.podCidr}` +
      (node.namespaces ? `, namespaces ${node.namespaces.net}` : ""),
  );
  await makeNodeNamespaces(node);
  await makeCgroupRoot(node);
  await mkdir(node.cniConfDir, { recursive: true });
  await writeFile(join(node.cniConfDir, `10-${CNI_NETWORK}.conflist`), cniConfig(node));
  const spawnOnNode = (component: string, command: string, args: string[]) => {
    const [onNodeCommand, onNodeArgs] = onNode(node, command, args);
    spawnManaged({
      name: `${component} (${node.name})`,
      command: onNodeCommand,
      args: onNodeArgs,
      detached: true,
      logFile: logName(node, component),
    });
  };

  const containerdConfigPath = join(node.stateDir, "containerd.toml");
  await mkdir(node.stateDir, { recursive: true });
  await writeFile(containerdConfigPath, containerdConfig(node, credentials.runc));
  spawnOnNode("containerd", "containerd", ["--config", containerdConfigPath]);
  await waitFor(
    `containerd of ${node.name} answering`,
    30_000,
    async () => (await tryRun("ctr", ["--address", node.containerdSocket, "version"])) !== undefined,
  );
  await importPauseImage(node);

  const kubeletConfigPath = join(node.stateDir, "kubelet.yaml");
  await writeFile(
    kubeletConfigPath,
    kubeletConfig(node, {
      caFile: credentials.caFile,
      servingCert: credentials.servingCert,
      servingKey: credentials.servingKey,
    }),
  );
  spawnOnNode("kubelet", join(credentials.binDir, "kubelet"), [
    `--config=${kubeletConfigPath}`,
    `--kubeconfig=${credentials.kubeletKubeconfig}`,
    `--node-ip=${node.ip}`,
    `--hostname-override=${node.name}`,
    "--v=1",
  ]);

  const proxyConfigPath = join(node.stateDir, "kube-proxy.yaml");
  await writeFile(proxyConfigPath, kubeProxyConfig(node, credentials.kubeProxyKubeconfig));
  spawnOnNode("kube-proxy", join(credentials.binDir, "kube-proxy"), [`--config=${proxyConfigPath}`, "--v=1"]);
}
