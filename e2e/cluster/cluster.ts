import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { readFileSync } from "node:fs";
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  ApiException,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  PolicyV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1PersistentVolume,
  type V1Pod,
} from "@kubernetes/client-node";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { IMAGES_FILE, KUBECONFIG_PATH, machinePath, readClusterNodes } from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll } from "vitest";

// What the cluster suites share: clients for the local cluster, the images
// cluster-sync installed, kubectl, and a namespace of their own that goes
// when the suite ends.

const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(KUBECONFIG_PATH);
export const core = kubeConfig.makeApiClient(CoreV1Api);
export const custom = kubeConfig.makeApiClient(CustomObjectsApi);
export const apps = kubeConfig.makeApiClient(AppsV1Api);
export const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
export const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
export const coordination = kubeConfig.makeApiClient(CoordinationV1Api);
export const discovery = kubeConfig.makeApiClient(DiscoveryV1Api);
export const policy = kubeConfig.makeApiClient(PolicyV1Api);
export const apiextensions = kubeConfig.makeApiClient(ApiextensionsV1Api);

/** Creates a VirtualMachine in the namespace, as the cluster admin. */
export async function createVm(namespace: string, vm: object): Promise<void> {
  await custom.createNamespacedCustomObject({
    group: "kubevirt.io",
    version: "v1",
    namespace,
    plural: "virtualmachines",
    body: vm,
  });
}

/** Only a 404 means absent: any other error (the API server down, a 403) is the test's failure, not an answer. */
export function undefinedIfNotFound(error: unknown): undefined {
  if (error instanceof ApiException && error.code === 404) return undefined;
  throw error;
}

const clusterNodes = await readClusterNodes();
/** The names of the cluster's nodes, as cluster-up made them (one, or NODES=n). */
export const nodeNames = clusterNodes.map((node) => node.name);

/**
 * Where a local volume's folder or device is on this machine: on the node its affinity names, which may keep its own
 * copy of the path.
 */
export function volumeOnMachine(volume: V1PersistentVolume): string {
  const path = volume.spec?.hostPath?.path ?? volume.spec?.local?.path ?? "";
  const terms = volume.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  const nodeName = terms.flatMap((t) => t.matchExpressions ?? []).find((e) => e.key === "kubernetes.io/hostname")
    ?.values?.[0];
  const node = clusterNodes.find((n) => n.name === nodeName);
  if (!node)
    throw new Error(
      `volume ${volume.metadata?.name ?? ""} is on no node of this cluster (${nodeName ?? "no hostname affinity"})`,
    );
  return machinePath(node, path);
}

/** The images cluster-sync built and loaded into the node. */
export const installedImages = JSON.parse(readFileSync(IMAGES_FILE, "utf8")) as { name: string; reference: string }[];

export function imageOf(name: string): string {
  return installedImages.find((i) => i.name === name)?.reference ?? `no ${name} image in ${IMAGES_FILE}`;
}

export type KubevirtObject = { metadata: { uid?: string }; status?: Record<string, unknown> } | undefined;

/**
 * A service account bound to Kubernetes' edit role in a namespace (which aggregates kubevirt.io:edit), and a new token
 * of it.
 */
export const editorToken = (namespace: string): Promise<string> => roleToken(namespace, "editor", "edit");

/**
 * A service account of a namespace bound to a ClusterRole (edit, view) there and in the other namespaces named, and a
 * new token of it.
 */
export async function roleToken(
  namespace: string,
  account: string,
  role: string,
  alsoIn: string[] = [],
): Promise<string> {
  // Asked for again in the same namespace, the account and its binding are there already: only a 409 means so.
  const unlessPresent = (create: Promise<unknown>) =>
    create.catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
  await unlessPresent(core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: account } } }));
  for (const bindingNamespace of [namespace, ...alsoIn]) {
    await unlessPresent(
      rbac.createNamespacedRoleBinding({
        namespace: bindingNamespace,
        body: {
          metadata: { name: `${namespace}-${account}` },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
          subjects: [{ kind: "ServiceAccount", name: account, namespace }],
        },
      }),
    );
  }
  return (
    (
      await core.createNamespacedServiceAccountToken({
        namespace,
        name: account,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status?.token ?? ""
  );
}

/** A VMI's phases so far, in order and comma-separated (its status.phaseTransitionTimestamps). */
export function phaseHistory(vmi: KubevirtObject): string {
  return ((vmi?.status?.phaseTransitionTimestamps ?? []) as { phase: string }[]).map((t) => t.phase).join(",");
}

export interface SuiteNamespace {
  name: string;
  kubectl: (...args: string[]) => Promise<string>;
  get: (
    plural: "virtualmachines" | "virtualmachineinstances" | "virtualmachineinstancemigrations",
    name: string,
  ) => Promise<KubevirtObject>;
  launcherPods: () => Promise<V1Pod[]>;
}

/** A namespace for the calling suite, created before its tests and deleted after them. */
export function suiteNamespace(prefix: string): SuiteNamespace {
  const name = `${prefix}-${Date.now().toString(36)}`;
  let binDir = "";
  beforeAll(async () => {
    binDir = await ensureBinaries(["kubectl"]);
    await core.createNamespace({ body: { metadata: { name } } });
  });
  afterAll(async () => {
    await core.deleteNamespace({ name });
  });
  return {
    name,
    kubectl: async (...args) =>
      (await promisify(execFile)(join(binDir, "kubectl"), [`--kubeconfig=${KUBECONFIG_PATH}`, ...args])).stdout,
    get: (plural, object) =>
      custom
        .getNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace: name, plural, name: object })
        .then((o) => o as KubevirtObject, undefinedIfNotFound),
    launcherPods: async () =>
      (await core.listNamespacedPod({ namespace: name, labelSelector: "kubevirt.io=virt-launcher" })).items,
  };
}
