import { readFile, writeFile, mkdir } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Pki } from "./pki.ts";
import { freePort } from "./ports.ts";
import { type ManagedProcess, logTail, spawnManaged } from "./process.ts";

// A real etcd and kube-apiserver on loopback, with TLS everywhere and RBAC,
// as the integration tests and `make up` use them.

/** The service network; the benchmarking range keeps clear of private ones. */
export const SERVICE_CIDR = "198.19.0.0/24";
/** The `kubernetes` Service's address: the first of SERVICE_CIDR. */
export const FIRST_SERVICE_IP = "198.19.0.1";

export interface ControlPlaneOptions {
  /** A folder for certificates, data and logs; created if missing. */
  dir: string;
  /** The folder holding the etcd and kube-apiserver binaries. */
  binDir: string;
  /** Leave the processes running after this process exits (`make up`). */
  detached?: boolean;
  /** Where logs go; `<dir>/logs` unless set. */
  logDir?: string;
  /** The address the API server listens on and advertises; 127.0.0.1 unless set. */
  address?: string;
  /** Fixed ports; free ones when unset. */
  apiserverPort?: number;
  etcdPort?: number;
  etcdPeerPort?: number;
  /** More names and addresses for the API server's serving certificate. */
  extraSans?: string[];
  /** Certificates made beforehand (a cluster adds its own to the same CA). */
  certificates?: Certificates;
  /** Authorizers in order; RBAC alone unless set. */
  authorizationModes?: string[];
  /** More kube-apiserver flags. */
  apiserverArgs?: string[];
  /** How long to wait for the API server to become ready. */
  readyTimeoutMs?: number;
}

export interface ControlPlane {
  server: string;
  certificates: Certificates;
  kubeconfigPath: string;
  kubeconfig: string;
  processes: ManagedProcess[];
  stop(): Promise<void>;
}

export interface Certificates {
  pki: Pki;
  etcdServer: { cert: string; key: string };
  etcdClient: { cert: string; key: string };
  apiserver: { cert: string; key: string };
  admin: { cert: string; key: string };
  serviceAccount: { privateKey: string; publicKey: string };
  /**
   * The aggregation layer's front proxy: a CA of its own, as on any real cluster, and the client certificate the API
   * server presents to aggregated API servers (virt-api's subresources.kubevirt.io), which trust the CA for it.
   */
  frontProxy: { ca: string; client: { cert: string; key: string } };
}

/** The name aggregated API servers accept on the front proxy's certificate (requestheader-allowed-names). */
export const FRONT_PROXY_CLIENT = "front-proxy-client";

/** A CA and the certificates of etcd, the API server and an admin. */
export async function createCertificates(dir: string, extraSans: string[] = []): Promise<Certificates> {
  const pki = new Pki(dir);
  await pki.createCa("kubevirt-ts-ca");
  const [etcdServer, etcdClient, apiserver, admin, serviceAccount] = await Promise.all([
    pki.issue({ name: "etcd-server", commonName: "etcd", hosts: ["localhost", "127.0.0.1"], usage: "both" }),
    pki.issue({ name: "apiserver-etcd-client", commonName: "kube-apiserver-etcd-client", usage: "client" }),
    pki.issue({
      name: "apiserver",
      commonName: "kube-apiserver",
      hosts: [
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "localhost",
        "127.0.0.1",
        FIRST_SERVICE_IP,
        ...extraSans,
      ],
      usage: "server",
    }),
    pki.issue({ name: "admin", commonName: "kubevirt-ts-admin", organization: "system:masters", usage: "client" }),
    pki.serviceAccountKeys(),
  ]);
  const frontProxyPki = new Pki(join(dir, "front-proxy"));
  await mkdir(frontProxyPki.dir, { recursive: true });
  await frontProxyPki.createCa("kubevirt-ts-front-proxy-ca");
  const frontProxyClient = await frontProxyPki.issue({
    name: FRONT_PROXY_CLIENT,
    commonName: FRONT_PROXY_CLIENT,
    usage: "client",
  });
  return {
    pki,
    etcdServer,
    etcdClient,
    apiserver,
    admin,
    serviceAccount,
    frontProxy: { ca: frontProxyPki.ca.cert, client: frontProxyClient },
  };
}

export async function kubeconfigFor(
  server: string,
  certs: { ca: string; cert: string; key: string },
  user: string,
): Promise<string> {
  const b64 = async (file: string) => (await readFile(file)).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: kubevirt-ts",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${await b64(certs.ca)}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    `    client-certificate-data: ${await b64(certs.cert)}`,
    `    client-key-data: ${await b64(certs.key)}`,
    "contexts:",
    "- name: kubevirt-ts",
    "  context:",
    "    cluster: kubevirt-ts",
    `    user: ${user}`,
    "current-context: kubevirt-ts",
    "",
  ].join("\n");
}

/** GET a path of the API server as the admin; resolves with the status code. */
function probe(url: string, tls: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { ...tls, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => {
      resolve(0);
    });
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

async function waitReady(
  server: string,
  certs: Certificates,
  processes: ManagedProcess[],
  timeoutMs: number,
): Promise<void> {
  const tls = {
    ca: await readFile(certs.pki.ca.cert),
    cert: await readFile(certs.admin.cert),
    key: await readFile(certs.admin.key),
  };
  const exits = processes.map((p) => p.exited.then((how) => ({ p, how })));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const exited = await Promise.race([...exits, sleep(500).then(() => undefined)]);
    if (exited) {
      throw new Error(
        `${exited.p.name} stopped (${exited.how}) before the API server was ready; its ` +
          `log ${exited.p.logFile} ends with:\n${logTail(exited.p.logFile)}`,
      );
    }
    if ((await probe(`${server}/readyz`, tls)) === 200) return;
  }
  const apiserver = processes.find((p) => p.name === "kube-apiserver");
  throw new Error(
    `the API server at ${server} was not ready after ${timeoutMs} ` +
      `ms; ${apiserver ? `its log ends with:\n${logTail(apiserver.logFile)}` : ""}`,
  );
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const { dir, binDir, detached = false, address = "127.0.0.1" } = options;
  const logDir = options.logDir ?? join(dir, "logs");
  await Promise.all([
    mkdir(join(dir, "pki"), { recursive: true }),
    mkdir(logDir, { recursive: true }),
    mkdir(join(dir, "etcd"), { recursive: true }),
  ]);
  const certs = options.certificates ?? (await createCertificates(join(dir, "pki"), options.extraSans));
  const [etcdPort, etcdPeerPort, apiserverPort] = await Promise.all([
    options.etcdPort ?? freePort(),
    options.etcdPeerPort ?? freePort(),
    options.apiserverPort ?? freePort(),
  ]);
  const etcdUrl = `https://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
  const server = `https://${address}:${apiserverPort}`;

  const processes: ManagedProcess[] = [];
  const stop = async () => {
    for (const p of [...processes].reverse()) await p.stop();
  };
  try {
    processes.push(
      spawnManaged({
        name: "etcd",
        command: join(binDir, "etcd"),
        detached,
        logFile: join(logDir, "etcd.log"),
        args: [
          "--name=kubevirt-ts",
          `--data-dir=${join(dir, "etcd")}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=kubevirt-ts=${peerUrl}`,
          `--cert-file=${certs.etcdServer.cert}`,
          `--key-file=${certs.etcdServer.key}`,
          "--client-cert-auth",
          `--trusted-ca-file=${certs.pki.ca.cert}`,
          // Test data is thrown away afterwards; syncing it to disk only slows tests down.
          ...(detached ? [] : ["--unsafe-no-fsync"]),
          "--log-level=warn",
        ],
      }),
    );
    processes.push(
      spawnManaged({
        name: "kube-apiserver",
        command: join(binDir, "kube-apiserver"),
        detached,
        logFile: join(logDir, "kube-apiserver.log"),
        args: [
          `--etcd-servers=${etcdUrl}`,
          `--etcd-cafile=${certs.pki.ca.cert}`,
          `--etcd-certfile=${certs.etcdClient.cert}`,
          `--etcd-keyfile=${certs.etcdClient.key}`,
          `--bind-address=${address}`,
          `--advertise-address=${address}`,
          `--secure-port=${apiserverPort}`,
          `--tls-cert-file=${certs.apiserver.cert}`,
          `--tls-private-key-file=${certs.apiserver.key}`,
          `--client-ca-file=${certs.pki.ca.cert}`,
          `--authorization-mode=${(options.authorizationModes ?? ["RBAC"]).join(",")}`,
          // As in kubeadm's clusters: the handler DaemonSet is privileged.
          "--allow-privileged=true",
          `--service-cluster-ip-range=${SERVICE_CIDR}`,
          "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
          `--service-account-key-file=${certs.serviceAccount.publicKey}`,
          `--service-account-signing-key-file=${certs.serviceAccount.privateKey}`,
          `--cert-dir=${join(dir, "apiserver-certs")}`,
          // The aggregation layer, as kubeadm sets it up: the API server authenticates users and passes them on in
          // these headers, over a client certificate of the front proxy's CA; it publishes both in
          // kube-system/extension-apiserver-authentication for aggregated servers to check.
          `--requestheader-client-ca-file=${certs.frontProxy.ca}`,
          `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
          "--requestheader-username-headers=X-Remote-User",
          "--requestheader-group-headers=X-Remote-Group",
          "--requestheader-extra-headers-prefix=X-Remote-Extra-",
          `--proxy-client-cert-file=${certs.frontProxy.client.cert}`,
          `--proxy-client-key-file=${certs.frontProxy.client.key}`,
          "--v=1",
          ...(options.apiserverArgs ?? []),
        ],
      }),
    );
    await waitReady(server, certs, processes, options.readyTimeoutMs ?? 90_000);
  } catch (error) {
    await stop();
    throw error;
  }

  const kubeconfig = await kubeconfigFor(server, { ca: certs.pki.ca.cert, ...certs.admin }, "admin");
  const kubeconfigPath = join(dir, "kubeconfig");
  await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
  return { server, certificates: certs, kubeconfigPath, kubeconfig, processes, stop };
}
