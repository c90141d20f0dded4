import { mkdir, open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnManaged } from "@kubevirt-ts/control-plane";
import { buildLocalPathHelperImage } from "@kubevirt-ts/images";
import { LOCAL_PATH_DIR, LOG_DIR, NODE_NAME, STATE_DIR } from "./config.ts";
import { log, run } from "./exec.ts";
import { importImages } from "./images.ts";

// The local cluster's storage, as a real cluster has it: rancher's
// local-path-provisioner (built from its Go module, ADR 13) runs on the node
// as a host process, as kube-controller-manager does, and serves the default
// StorageClass `local-path`. Each claim becomes a folder under
// LOCAL_PATH_DIR, made and removed by a helper pod, on the node the claim's
// first pod is scheduled to (WaitForFirstConsumer).
//
// local-path-provisioner makes folders only, so Block-mode claims have a
// StorageClass of their own, `local-block`: local PersistentVolumes in Block
// mode on loop devices, which cluster-up makes as an administrator makes
// static local volumes (what sig-storage-local-static-provisioner automates;
// its module is not to be had here). The kubelet maps them into pods, and
// containerd gives the device to the container's user (the launcher's 107),
// as KubeVirt needs of its nodes (device_ownership_from_security_context).

export const STORAGE_NAMESPACE = "local-path-storage";
export const STORAGE_CLASS = "local-path";
const PROVISIONER = "rancher.io/local-path";
/** The user of the provisioner's client certificate, whom its ClusterRole is bound to. */
export const PROVISIONER_USER = "kubevirt-ts:local-path-provisioner";
const CONFIG_MAP = "local-path-config";
const HELPER_ACCOUNT = "local-path-helper";
/** The provisioner's configuration: every node keeps its claims under LOCAL_PATH_DIR. */
const PROVISIONER_CONFIG = JSON.stringify({
  nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [LOCAL_PATH_DIR] }],
});

/**
 * The objects the provisioner needs: its namespace, its rights, its helper pod's template and scripts, and the
 * StorageClass.
 */
export function storageObjects(helperImage: string): object[] {
  // The helper pod makes and removes one claim's folder; the provisioner adds the host path and the command.
  const helperPod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "helper-pod" },
    spec: {
      priorityClassName: "system-node-critical",
      tolerations: [{ key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" }],
      containers: [
        {
          name: "helper-pod",
          image: helperImage,
          imagePullPolicy: "Never",
          resources: { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "32Mi" } },
        },
      ],
    },
  };
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: STORAGE_NAMESPACE } },
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: HELPER_ACCOUNT, namespace: STORAGE_NAMESPACE },
      automountServiceAccountToken: false,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "local-path-provisioner" },
      rules: [
        {
          apiGroups: [""],
          resources: ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
          verbs: ["get", "list", "watch"],
        },
        {
          apiGroups: [""],
          resources: ["persistentvolumes"],
          verbs: ["get", "list", "watch", "create", "patch", "update", "delete"],
        },
        { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
        { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["get", "list", "watch"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "local-path-provisioner" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "local-path-provisioner" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: PROVISIONER_USER }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "local-path-provisioner", namespace: STORAGE_NAMESPACE },
      rules: [
        {
          apiGroups: [""],
          resources: ["pods"],
          verbs: ["get", "list", "watch", "create", "patch", "update", "delete"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "local-path-provisioner", namespace: STORAGE_NAMESPACE },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "local-path-provisioner" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: PROVISIONER_USER }],
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: CONFIG_MAP, namespace: STORAGE_NAMESPACE },
      data: {
        "config.json": PROVISIONER_CONFIG,
        // A claim's folder is writable by any pod's user: the launcher runs as its own unprivileged user.
        setup: 'set -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        teardown: 'set -eu\nrm -rf "$VOL_DIR"\n',
        "helperPod.yaml": JSON.stringify(helperPod),
      },
    },
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: STORAGE_CLASS, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
      provisioner: PROVISIONER,
      // A claim's folder is on one node: the scheduler picks the node with the claim's first pod.
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    },
  ];
}

/**
 * Installs the provisioner's objects and starts it. `kubectl` is the cluster's kubectl with the admin's kubeconfig
 * flag; `kubeconfig` is the provisioner's own (its client certificate names PROVISIONER_USER).
 */
export async function startStorage(options: { binary: string; kubectl: string[]; kubeconfig: string }): Promise<void> {
  const helper = await buildLocalPathHelperImage();
  await importImages([helper]);
  const [command = "kubectl", ...args] = options.kubectl;
  await run(
    command,
    [...args, "apply", "--server-side", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: storageObjects(helper.reference) }),
  );
  await mkdir(LOCAL_PATH_DIR, { recursive: true });
  // The provisioner reads its configuration from a file; the ConfigMap holds the same for its helper pods' scripts.
  const configFile = join(STATE_DIR, "local-path-config.json");
  await writeFile(configFile, PROVISIONER_CONFIG);
  log(`local-path-provisioner: the default StorageClass ${STORAGE_CLASS}, claims under ${LOCAL_PATH_DIR}`);
  spawnManaged({
    name: "local-path-provisioner",
    command: options.binary,
    detached: true,
    logFile: join(LOG_DIR, "local-path-provisioner.log"),
    args: [
      "start",
      `--kubeconfig=${options.kubeconfig}`,
      `--config=${configFile}`,
      `--namespace=${STORAGE_NAMESPACE}`,
      `--configmap-name=${CONFIG_MAP}`,
      `--service-account-name=${HELPER_ACCOUNT}`,
      `--provisioner-name=${PROVISIONER}`,
      `--helper-image=${helper.reference}`,
    ],
  });
}

export const BLOCK_STORAGE_CLASS = "local-block";
/** The loop devices' backing files: with the cluster's state, so cluster-down removes them (after detaching them). */
export const BLOCK_DIR = join(STATE_DIR, "block");
const BLOCK_VOLUMES = 4;
const BLOCK_VOLUME_BYTES = 256 * 2 ** 20;

/** A local PersistentVolume in Block mode on the device, on the node. */
export function blockVolume(index: number, device: string): object {
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `${BLOCK_STORAGE_CLASS}-${String(index)}` },
    spec: {
      capacity: { storage: `${String(BLOCK_VOLUME_BYTES / 2 ** 20)}Mi` },
      volumeMode: "Block",
      accessModes: ["ReadWriteOnce"],
      // Static volumes: nothing deletes them; a released one waits for the next cluster-up.
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: BLOCK_STORAGE_CLASS,
      local: { path: device },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [NODE_NAME] }] },
          ],
        },
      },
    },
  };
}

/** Makes the loop devices and their PersistentVolumes, and the StorageClass of Block-mode claims. */
export async function startBlockStorage(kubectl: string[]): Promise<void> {
  await mkdir(BLOCK_DIR, { recursive: true });
  const volumes: object[] = [];
  for (let i = 0; i < BLOCK_VOLUMES; i++) {
    const file = join(BLOCK_DIR, `volume-${String(i)}.img`);
    const handle = await open(file, "w");
    await handle.truncate(BLOCK_VOLUME_BYTES);
    await handle.close();
    volumes.push(blockVolume(i, (await run("losetup", ["--find", "--show", file])).trim()));
  }
  const storageClass = {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: BLOCK_STORAGE_CLASS },
    provisioner: "kubernetes.io/no-provisioner",
    volumeBindingMode: "WaitForFirstConsumer",
  };
  const [command = "kubectl", ...args] = kubectl;
  await run(
    command,
    [...args, "apply", "--server-side", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: [storageClass, ...volumes] }),
  );
  log(
    `block storage: the StorageClass ${BLOCK_STORAGE_CLASS}, ${String(BLOCK_VOLUMES)} volumes ` +
      `of ${String(BLOCK_VOLUME_BYTES / 2 ** 20)} MiB on loop devices`,
  );
}
