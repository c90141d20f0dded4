import type { PersistentVolumeClaim, Pod, PodSpec, Secret } from "@kubevirt-ts/kube";
import {
  CLAIM_POPULATED_FOR,
  CLAIM_UPLOAD_TARGET,
  IMPORTER_CONTAINER,
  IMPORTER_PROGRESS_PORT,
  ImporterDir,
  ImporterEnv,
  type ImporterSource,
  UPLOAD_KEY_SECRET_KEY,
  UPLOAD_SERVER_PORT,
  uploadKeySecretName,
  uploadPodName,
} from "@kubevirt-ts/node-contract";
import {
  CDI_API_VERSION,
  type DataVolume,
  Label,
  LabelValue,
  controllerRef,
  parseQuantity,
} from "@kubevirt-ts/kubevirt-api";
import { alignDownToMiB, claimRequestBytes, dataVolumeDiskBytes } from "@kubevirt-ts/vm-rules";
import { deriveUploadKey } from "@kubevirt-ts/runtime";
import { diskCopyInitContainers, restrictedContainer } from "../common/disk-copy.ts";
import { diskPodSecurityContext, onNode } from "../common/disk-pod.ts";

// The claim a DataVolume makes and the importer pod that fills it, as pure
// functions of the DataVolume, as CDI makes them: the claim is named as the
// DataVolume and owned by it; the importer (restarted by the kubelet with
// back-off when it fails) runs as the launcher's user, so the disk it writes
// is the launcher's to use.

export interface ImporterConfig {
  importerImage: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  /**
   * The chart's upload master key (UPLOAD_MASTER_KEY_FILE), from which each upload pod's key is derived
   * (uploadKeySecret).
   */
  uploadMasterKey: Uint8Array;
}

const { tools: TOOLS_DIR, source: SOURCE_DIR, target: TARGET_DIR } = ImporterDir;
const TOOLS = "tools";
const TARGET = "target";
const SOURCE = "source";

/** The size a clone's source claim asks for, in bytes: a clone that names no size takes it. */
function sourceBytes(source: PersistentVolumeClaim | undefined): number | undefined {
  const request = source?.spec?.resources?.requests?.storage;
  return request === undefined ? undefined : parseQuantity(request);
}

/** The claim a DataVolume makes: its name, owned by it, sized by CDI's rules; undefined while its size is unknown. */
export function dataVolumeClaim(
  dv: DataVolume,
  source: PersistentVolumeClaim | undefined,
): PersistentVolumeClaim | undefined {
  const bytes = claimRequestBytes(dv.spec) ?? sourceBytes(source);
  if (bytes === undefined) return undefined;
  const spec = dv.spec.storage ?? dv.spec.pvc ?? {};
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: dv.metadata.name,
      namespace: dv.metadata.namespace,
      labels: { [Label.App]: LabelValue.Importer },
      annotations: {
        [CLAIM_POPULATED_FOR]: dv.metadata.name ?? "",
        ...(dv.spec.source?.upload ? { [CLAIM_UPLOAD_TARGET]: "" } : {}),
      },
      ownerReferences: [controllerRef(dv)],
    },
    spec: {
      accessModes: spec.accessModes ?? ["ReadWriteOnce"],
      volumeMode: "Filesystem",
      ...(spec.storageClassName !== undefined ? { storageClassName: spec.storageClassName } : {}),
      resources: { requests: { storage: String(bytes) } },
    },
  };
}

/**
 * The size of the disk the importer writes: the size asked for, or the source claim's less the overhead. A clone into
 * a claim asked for by size (`pvc`) copies the source's disk.img as it is, and one a launcher made fills its whole
 * claim: its disk may then be as large as the claim (cloneDiskBytes).
 */
export function importDiskBytes(dv: DataVolume, source: PersistentVolumeClaim | undefined): number | undefined {
  const disk = dataVolumeDiskBytes(dv.spec, sourceBytes(source));
  if (disk === undefined || !dv.spec.source?.pvc || !dv.spec.pvc) return disk;
  return Math.max(disk, cloneDiskBytes(claimRequestBytes(dv.spec) ?? sourceBytes(source) ?? 0));
}

/** The largest disk a copy of a claim's disk.img may be in a claim of `claimBytes`: the whole claim, in MiB. */
export const cloneDiskBytes = (claimBytes: number): number => alignDownToMiB(claimBytes);

/** Which source the importer fills the claim from. */
export function importerSource(dv: DataVolume): ImporterSource {
  const source = dv.spec.source ?? {};
  return source.http ? "http" : source.registry ? "registry" : source.pvc ? "pvc" : source.upload ? "upload" : "blank";
}

/** The importer pod's name, as CDI names it: importer-<claim>, or cdi-upload-<claim> for an upload. */
export const importerPodName = (dv: DataVolume): string =>
  dv.spec.source?.upload ? uploadPodName(dv.metadata.name ?? "") : `importer-${dv.metadata.name ?? ""}`;

/**
 * The node a claim of local storage is bound to (WaitForFirstConsumer): the scheduler's choice for its first pod, as it
 * annotates the claim; undefined while it has none.
 */
export const claimNode = (claim: PersistentVolumeClaim | undefined): string | undefined =>
  claim?.metadata.annotations?.["volume.kubernetes.io/selected-node"];

/**
 * The importer pod that fills the DataVolume's claim. `node`: where it must run, the node of the other claims of the VM
 * that owns the DataVolume, so that on local storage its claim is bound where the VM's pod can mount them all (CDI
 * reaches the same by waiting for the VM's pod as the claim's first consumer).
 */
export function importerPod(dv: DataVolume, diskBytes: number, config: ImporterConfig, node?: string): Pod {
  const source = dv.spec.source ?? {};
  const kind = importerSource(dv);
  const env: NonNullable<NonNullable<PodSpec["containers"]>[number]["env"]> = [
    { name: ImporterEnv.source, value: kind },
    { name: ImporterEnv.diskBytes, value: String(diskBytes) },
    { name: ImporterEnv.targetDir, value: TARGET_DIR },
    { name: ImporterEnv.sourceDir, value: SOURCE_DIR },
  ];
  if (source.http) {
    env.push(
      { name: ImporterEnv.endpoint, value: source.http.url },
      { name: ImporterEnv.extraHeaders, value: JSON.stringify(source.http.extraHeaders ?? []) },
    );
    if (source.http.secretRef !== undefined) {
      // CDI's keys: the Secret's accessKeyId and secretKey are the user and password.
      env.push(
        {
          name: ImporterEnv.accessKeyId,
          valueFrom: { secretKeyRef: { name: source.http.secretRef, key: "accessKeyId" } },
        },
        { name: ImporterEnv.secretKey, valueFrom: { secretKeyRef: { name: source.http.secretRef, key: "secretKey" } } },
      );
    }
  }
  // An upload's pod serves the upload server, with the key the upload proxy presents (uploadKeySecret), and is ready
  // once it listens.
  if (kind === "upload")
    env.push({
      name: ImporterEnv.uploadKey,
      valueFrom: { secretKeyRef: { name: uploadKeySecretName(dv.metadata.name ?? ""), key: UPLOAD_KEY_SECRET_KEY } },
    });
  const volumes: NonNullable<PodSpec["volumes"]> = [
    { name: TARGET, persistentVolumeClaim: { claimName: dv.metadata.name ?? "" } },
  ];
  const mounts: { name: string; mountPath: string; readOnly?: boolean }[] = [{ name: TARGET, mountPath: TARGET_DIR }];
  // CDI's certConfigMap and secretExtraHeaders, mounted read-only where the importer reads them.
  if (source.http?.certConfigMap !== undefined) {
    volumes.push({ name: "cert-config", configMap: { name: source.http.certConfigMap } });
    mounts.push({ name: "cert-config", mountPath: ImporterDir.certs, readOnly: true });
    env.push({ name: ImporterEnv.certDir, value: ImporterDir.certs });
  }
  const headerSecrets = source.http?.secretExtraHeaders ?? [];
  headerSecrets.forEach((secretName, i) => {
    volumes.push({ name: `extra-headers-${String(i)}`, secret: { secretName } });
    mounts.push({
      name: `extra-headers-${String(i)}`,
      mountPath: `${ImporterDir.secretHeaders}/${String(i)}`,
      readOnly: true,
    });
  });
  if (headerSecrets.length > 0) env.push({ name: ImporterEnv.secretHeadersDir, value: ImporterDir.secretHeaders });
  if (source.pvc) {
    volumes.push({ name: SOURCE, persistentVolumeClaim: { claimName: source.pvc.name, readOnly: true } });
    mounts.push({ name: SOURCE, mountPath: SOURCE_DIR, readOnly: true });
  }
  // As a containerDisk's: the image holds only its disk, which it copies out with our copier.
  const initContainers = source.registry
    ? diskCopyInitContainers(
        { image: config.importerImage, imagePullPolicy: config.imagePullPolicy },
        { volume: TOOLS, mountPath: TOOLS_DIR },
        [
          {
            name: "registry-disk",
            image: source.registry.url.replace(/^docker:\/\//, ""),
            imagePullPolicy: "IfNotPresent",
            from: "/disk",
            volume: SOURCE,
            mountPath: SOURCE_DIR,
          },
        ],
      )
    : [];
  if (source.registry) {
    volumes.push({ name: SOURCE, emptyDir: {} }, { name: TOOLS, emptyDir: {} });
    mounts.push({ name: SOURCE, mountPath: SOURCE_DIR });
  }
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: importerPodName(dv),
      namespace: dv.metadata.namespace,
      labels: { [Label.App]: LabelValue.Importer },
      ownerReferences: [controllerRef(dv)],
    },
    spec: {
      // The kubelet restarts a failed import with its back-off, as CDI's importer pod is.
      restartPolicy: "OnFailure",
      automountServiceAccountToken: false,
      securityContext: diskPodSecurityContext,
      ...onNode(node),
      ...(initContainers.length > 0 ? { initContainers } : {}),
      containers: [
        {
          name: IMPORTER_CONTAINER,
          image: config.importerImage,
          imagePullPolicy: config.imagePullPolicy,
          env,
          ports: [
            { name: "metrics", containerPort: IMPORTER_PROGRESS_PORT },
            ...(kind === "upload" ? [{ name: "upload", containerPort: UPLOAD_SERVER_PORT }] : []),
          ],
          ...(kind === "upload"
            ? { readinessProbe: { tcpSocket: { port: UPLOAD_SERVER_PORT }, periodSeconds: 2 } }
            : {}),
          resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "512Mi" } },
          securityContext: restrictedContainer,
          terminationMessagePolicy: "FallbackToLogsOnError",
          volumeMounts: mounts,
        },
      ],
      volumes,
    },
  };
}

/** What a claim copy is: the copy claim to fill, the claim it copies, who owns the pod, and where it must run. */
export interface ClaimCopy {
  /** The claim the copy is written to, in `namespace`. */
  target: string;
  namespace: string;
  /** The claim copied, in the same namespace, mounted read-only. */
  source: string;
  /** The disk's size in bytes: the source claim's disk, which the copy's disk is grown to. */
  diskBytes: number;
  owner: ReturnType<typeof controllerRef>;
  /** The source claim's node, for local storage (claimNode). */
  node?: string | undefined;
  /** The source's disk is open by a running VM the caller quiesced: the importer reads it despite QEMU's lock. */
  inUse: boolean;
}

/** The DataVolume a claim copy is the clone of: its importer is the copy pod. */
const cloneOf = (copy: Pick<ClaimCopy, "target" | "namespace" | "source">): DataVolume => ({
  apiVersion: CDI_API_VERSION,
  kind: "DataVolume",
  metadata: { name: copy.target, namespace: copy.namespace },
  spec: { source: { pvc: { namespace: copy.namespace, name: copy.source } } },
});

/** The name of the pod that fills the copy claim `target`. */
export const claimCopyPodName = (target: string): string =>
  importerPodName(cloneOf({ target, namespace: "", source: "" }));

/**
 * The pod that copies one claim's disk into another: the importer of a DataVolume cloned from the source claim (pvc
 * source), owned by `copy.owner` instead (the snapshot controller's VirtualMachineSnapshotContent, docs/adr/0027).
 */
export function claimCopyPod(copy: ClaimCopy, config: ImporterConfig): Pod {
  const pod = importerPod(cloneOf(copy), copy.diskBytes, config, copy.node);
  const [container, ...others] = pod.spec?.containers ?? [];
  if (container === undefined) throw new Error("the importer pod has no container");
  const env = [...(container.env ?? []), { name: ImporterEnv.sourceInUse, value: String(copy.inUse) }];
  return {
    ...pod,
    metadata: { ...pod.metadata, ownerReferences: [copy.owner] },
    spec: { ...pod.spec, containers: [{ ...container, env }, ...others] },
  };
}

/**
 * The Secret of an upload pod's key, owned by the DataVolume: the key is derived from the upload master key and the
 * DataVolume's uid (deriveUploadKey), which virt-api's upload proxy derives again, so virt-api reads no Secret. Only
 * the pod reads it (by secretKeyRef: its spec shows the Secret's name, not the key); a `view` user reads the pod but
 * no Secret, and the master key is in no object a tenant reads.
 */
export function uploadKeySecret(dv: DataVolume, master: Uint8Array): Secret {
  const key = deriveUploadKey(master, dv.metadata.uid ?? "");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: uploadKeySecretName(dv.metadata.name ?? ""),
      namespace: dv.metadata.namespace,
      labels: { [Label.App]: LabelValue.Importer },
      ownerReferences: [controllerRef(dv)],
    },
    type: "Opaque",
    data: { [UPLOAD_KEY_SECRET_KEY]: Buffer.from(key).toString("base64") },
  };
}

/** An image without its tag or digest: the repository it is pulled from. */
const repository = (image: string | undefined): string => (image ?? "").replace(/@.*$/, "").replace(/:[^:/]*$/, "");

/**
 * What decides the code a container runs and what it reaches, as the API server keeps it (its defaults aside): the
 * image's repository, command, arguments, environment and mounts. The disk size's value is left out: it is fixed when
 * the pod is made from claim sizes that may move since, and only sizes the namespace's own disk.
 */
function whatRuns(c: NonNullable<PodSpec["containers"]>[number]): string {
  const env = (c.env ?? []).map((e) => {
    const from = e.valueFrom;
    const source = from?.secretKeyRef
      ? `secret ${from.secretKeyRef.name}/${from.secretKeyRef.key}`
      : from?.fieldRef
        ? `field ${from.fieldRef.fieldPath}`
        : from
          ? JSON.stringify(from)
          : "";
    return `${e.name}=${e.name === ImporterEnv.diskBytes ? "" : (e.value ?? "")}${source}`;
  });
  const mounts = (c.volumeMounts ?? []).map(
    (m) => `${m.name}:${m.mountPath}:${String(m.readOnly ?? false)}:${m.subPath ?? ""}`,
  );
  return JSON.stringify({
    image: repository(c.image),
    command: c.command ?? [],
    args: c.args ?? [],
    workingDir: c.workingDir ?? "",
    env,
    envFrom: c.envFrom ?? [],
    mounts,
  });
}

/**
 * Why a pod named as the DataVolume's importer, and controlled by it, is not the importer this controller made; or
 * undefined when it is. A tenant with `edit` in the namespace can make a pod of that name, label and owner reference
 * (and once made by anyone, only its metadata can change), so those prove nothing. What the tenant cannot do is run
 * other code under the importer's layout: the pod is the controller's when its containers are exactly the ones
 * importerPod() makes for the DataVolume (names, image repository, command, arguments, environment, mounts, the claims
 * its volumes name) and nothing was added to it (an ephemeral container, a shared process namespace, the host's
 * namespaces). The image's tag is not compared, so that a pod made before an upgrade of the importer image is still
 * the controller's. (A recorded uid was the other way; there is no place for it a tenant with `edit` cannot write but
 * the DataVolume's status, whose schema is CDI's.) A pod that is not the controller's is not read from: the
 * controller reads its progress only from its own, and then at most a few KiB (controller.ts).
 */
export function importerPodMismatch(pod: Pod, expected: Pod): string | undefined {
  const spec = pod.spec ?? { containers: [] };
  const want = expected.spec ?? { containers: [] };
  if ((spec.ephemeralContainers ?? []).length > 0) return "an ephemeral container was added to it";
  if (
    spec.shareProcessNamespace === true ||
    spec.hostNetwork === true ||
    spec.hostPID === true ||
    spec.hostIPC === true
  )
    return "it shares a process or host namespace";
  for (const [kind, have, wanted] of [
    ["container", spec.containers, want.containers],
    ["init container", spec.initContainers ?? [], want.initContainers ?? []],
  ] as const) {
    if (have.map((c) => c.name).join() !== wanted.map((c) => c.name).join())
      return `its ${kind}s are [${have.map((c) => c.name).join(", ")}], not [${wanted.map((c) => c.name).join(", ")}]`;
    const differs = have.find((c, i) => {
      const ours = wanted[i];
      return ours === undefined || whatRuns(c) !== whatRuns(ours);
    });
    if (differs)
      return `its ${kind} ${differs.name} is not the importer's (image, command, environment or mounts differ)`;
  }
  const claims = (s: PodSpec) =>
    JSON.stringify(
      (s.volumes ?? []).map((v) => [v.name, v.persistentVolumeClaim?.claimName ?? "", v.emptyDir ? "emptyDir" : ""]),
    );
  if (claims(spec) !== claims(want)) return "its volumes are not the importer's";
  return undefined;
}
