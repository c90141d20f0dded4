import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import {
  FIRST_SERVICE_IP,
  SERVICE_CIDR,
  createCertificates,
  kubeconfigFor,
  spawnManaged,
  startControlPlane,
} from "@kubevirt-ts/control-plane";
import { cleanUp, applyHostSettings } from "./cleanup.ts";
import {
  APISERVER_PORT,
  BROWSER_IP,
  BROWSER_LINK,
  BROWSER_NETNS,
  ETCD_PEER_PORT,
  ETCD_PORT,
  KUBECONFIG_PATH,
  LOCAL_DIR,
  LOG_DIR,
  MAX_NODES,
  NODES_FILE,
  NODE_BRIDGE,
  NODE_IP,
  NODE_NAME,
  NODE_PREFIX,
  RUN_DIR,
  STATE_DIR,
  clusterNodes,
} from "./config.ts";
import { log, run } from "./exec.ts";
import { COREDNS_USER, dnsReady, startDns } from "./dns.ts";
import { runcBinary, startNode } from "./node.ts";
import { PROVISIONER_USER, startBlockStorage, startStorage } from "./storage.ts";
import { NAMESPACE } from "./sync.ts";
import { webhookClientSetup } from "./webhook-client.ts";

// cluster-up: a Kubernetes cluster of real processes on this machine, of one
// node or more (node.ts), started from a clean slate every time, with what a
// cluster has beside its nodes: DNS (dns.ts) and storage (storage.ts).

const PKI = join(STATE_DIR, "pki");
const SERVER = `https://${NODE_IP}:${APISERVER_PORT}`;

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen within ${timeoutMs / 1000} s; see the logs in ${LOG_DIR}`);
    await sleep(500);
  }
}

async function setUpNetwork(): Promise<void> {
  // The node's address lives on a bridge of its own: this kernel has no dummy links.
  await run("ip", ["link", "add", NODE_BRIDGE, "type", "bridge"]);
  await run("ip", ["addr", "add", `${NODE_IP}/${NODE_PREFIX}`, "dev", NODE_BRIDGE]);
  await run("ip", ["link", "set", NODE_BRIDGE, "up"]);
  // Service addresses stay on the node: a connection made before kube-proxy has a rule for its Service (the API
  // server checking an APIService just installed) would otherwise follow the default route off the machine, and a
  // kept-alive one would stay there. On the bridge it fails and is made again, through kube-proxy's rule.
  await run("ip", ["route", "add", SERVICE_CIDR, "dev", NODE_BRIDGE]);
  await run("ip", ["netns", "add", BROWSER_NETNS]);
  await run("ip", ["link", "add", BROWSER_LINK, "type", "veth", "peer", "name", "eth0", "netns", BROWSER_NETNS]);
  await run("ip", ["link", "set", BROWSER_LINK, "master", NODE_BRIDGE, "up"]);
  const inBrowserNetns = ["netns", "exec", BROWSER_NETNS, "ip"];
  await run("ip", [...inBrowserNetns, "addr", "add", `${BROWSER_IP}/${NODE_PREFIX}`, "dev", "eth0"]);
  await run("ip", [...inBrowserNetns, "link", "set", "eth0", "up"]);
  await run("ip", [...inBrowserNetns, "link", "set", "lo", "up"]);
  await run("ip", [...inBrowserNetns, "route", "add", "default", "via", NODE_IP]);
  await applyHostSettings({
    "/proc/sys/net/ipv4/ip_forward": "1",
    // Service traffic between pods on the same bridge must pass kube-proxy's rules.
    "/proc/sys/net/bridge/bridge-nf-call-iptables": "1",
  });
}

async function componentKubeconfig(name: string, caFile: string, pair: { cert: string; key: string }): Promise<string> {
  const path = join(STATE_DIR, "kubeconfigs", `${name}.kubeconfig`);
  await mkdir(join(STATE_DIR, "kubeconfigs"), { recursive: true });
  await writeFile(path, await kubeconfigFor(SERVER, { ca: caFile, ...pair }, name), { mode: 0o600 });
  return path;
}

/**
 * Where cluster-up finds what it runs: Kubernetes' binaries (with kubectl), the storage provisioner's and CoreDNS's;
 * and how many nodes to make.
 */
export interface ClusterOptions {
  binDir: string;
  provisioner: string;
  coredns: string;
  nodes: number;
}

export async function clusterUp({ binDir, provisioner, coredns, nodes: nodeCount }: ClusterOptions): Promise<void> {
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > MAX_NODES)
    throw new Error(`NODES must be a whole number from 1 to ${String(MAX_NODES)}, not ${String(nodeCount)}`);
  const nodes = clusterNodes(nodeCount);
  log("removing whatever an earlier run left");
  await cleanUp();
  for (const dir of [STATE_DIR, RUN_DIR, LOG_DIR, PKI]) await mkdir(dir, { recursive: true });

  log("network: node bridge, forwarding");
  await setUpNetwork();
  await writeFile(NODES_FILE, `${JSON.stringify(nodes, null, 2)}\n`);

  log("certificates");
  const certs = await createCertificates(PKI, [NODE_IP, NODE_NAME]);
  const { pki } = certs;
  const ca = pki.ca.cert;
  const [controllerManager, scheduler, kubeProxy, apiserverKubeletClient, provisionerClient, corednsClient] =
    await Promise.all([
      pki.issue({ name: "kube-controller-manager", commonName: "system:kube-controller-manager", usage: "client" }),
      pki.issue({ name: "kube-scheduler", commonName: "system:kube-scheduler", usage: "client" }),
      pki.issue({ name: "kube-proxy", commonName: "system:kube-proxy", usage: "client" }),
      pki.issue({
        name: "apiserver-kubelet-client",
        commonName: "kube-apiserver-kubelet-client",
        organization: "system:masters",
        usage: "client",
      }),
      pki.issue({ name: "local-path-provisioner", commonName: PROVISIONER_USER, usage: "client" }),
      pki.issue({ name: "coredns", commonName: COREDNS_USER, usage: "client" }),
    ]);

  // The API server presents a client certificate to virt-api's webhooks, which take no other caller (ADR 7).
  const admissionConfig = await webhookClientSetup({ name: "virt-api", namespace: NAMESPACE });

  log("etcd and kube-apiserver");
  const controlPlane = await startControlPlane({
    dir: STATE_DIR,
    binDir,
    detached: true,
    logDir: LOG_DIR,
    address: NODE_IP,
    apiserverPort: APISERVER_PORT,
    etcdPort: ETCD_PORT,
    etcdPeerPort: ETCD_PEER_PORT,
    certificates: certs,
    authorizationModes: ["Node", "RBAC"],
    apiserverArgs: [
      "--enable-admission-plugins=NodeRestriction",
      admissionConfig,
      `--kubelet-client-certificate=${apiserverKubeletClient.cert}`,
      `--kubelet-client-key=${apiserverKubeletClient.key}`,
      `--kubelet-certificate-authority=${ca}`,
      "--kubelet-preferred-address-types=InternalIP",
    ],
  });
  await mkdir(LOCAL_DIR, { recursive: true });
  await writeFile(KUBECONFIG_PATH, controlPlane.kubeconfig, { mode: 0o600 });

  log("kube-controller-manager and kube-scheduler");
  const cmKubeconfig = await componentKubeconfig("kube-controller-manager", ca, controllerManager);
  spawnManaged({
    name: "kube-controller-manager",
    command: join(binDir, "kube-controller-manager"),
    detached: true,
    logFile: join(LOG_DIR, "kube-controller-manager.log"),
    args: [
      `--kubeconfig=${cmKubeconfig}`,
      `--authentication-kubeconfig=${cmKubeconfig}`,
      `--authorization-kubeconfig=${cmKubeconfig}`,
      "--bind-address=127.0.0.1",
      "--leader-elect=false",
      "--use-service-account-credentials=true",
      `--cluster-signing-cert-file=${ca}`,
      `--cluster-signing-key-file=${pki.ca.key}`,
      `--root-ca-file=${ca}`,
      `--service-account-private-key-file=${certs.serviceAccount.privateKey}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--allocate-node-cidrs=false",
      "--v=1",
    ],
  });
  const schedulerKubeconfig = await componentKubeconfig("kube-scheduler", ca, scheduler);
  spawnManaged({
    name: "kube-scheduler",
    command: join(binDir, "kube-scheduler"),
    detached: true,
    logFile: join(LOG_DIR, "kube-scheduler.log"),
    args: [
      `--kubeconfig=${schedulerKubeconfig}`,
      `--authentication-kubeconfig=${schedulerKubeconfig}`,
      `--authorization-kubeconfig=${schedulerKubeconfig}`,
      "--bind-address=127.0.0.1",
      "--leader-elect=false",
      "--v=1",
    ],
  });

  // Each node's kubelet has certificates of its own: NodeRestriction lets it touch its own node and pods only.
  const kubeProxyKubeconfig = await componentKubeconfig("kube-proxy", ca, kubeProxy);
  const runc = await runcBinary();
  for (const node of nodes) {
    const suffix = node.index === 1 ? "" : `-${node.name}`;
    const [kubeletClient, kubeletServing] = await Promise.all([
      pki.issue({
        name: `kubelet-client${suffix}`,
        commonName: `system:node:${node.name}`,
        organization: "system:nodes",
        usage: "client",
      }),
      pki.issue({
        name: `kubelet-serving${suffix}`,
        commonName: node.name,
        hosts: [node.name, node.ip],
        usage: "server",
      }),
    ]);
    await startNode(
      node,
      {
        binDir,
        caFile: ca,
        kubeProxyKubeconfig,
        servingCert: kubeletServing.cert,
        servingKey: kubeletServing.key,
        runc,
        kubeletKubeconfig: await componentKubeconfig(`kubelet${suffix}`, ca, kubeletClient),
      },
      waitFor,
    );
  }

  log("cluster DNS: CoreDNS behind the kube-dns Service");
  const kubectl = [join(binDir, "kubectl"), `--kubeconfig=${KUBECONFIG_PATH}`];
  await startDns({ binary: coredns, kubectl, kubeconfig: await componentKubeconfig("coredns", ca, corednsClient) });

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(controlPlane.kubeconfig);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  for (const { name } of nodes) {
    log(`waiting for node ${name} to be Ready`);
    await waitFor(`node ${name} becoming Ready`, 180_000, async () => {
      const node = await core.readNode({ name });
      return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
    });
  }
  await waitFor("CoreDNS answering", 60_000, dnsReady);
  log("storage: local-path-provisioner and the default StorageClass");
  await startStorage({
    binary: provisioner,
    kubectl,
    kubeconfig: await componentKubeconfig("local-path-provisioner", ca, provisionerClient),
  });
  await startBlockStorage(kubectl);
  log(
    `the cluster is up: ${SERVER}, kubernetes Service at ${FIRST_SERVICE_IP}, ` +
      `nodes ${nodes.map((n) => n.name).join(", ")}`,
  );
}
