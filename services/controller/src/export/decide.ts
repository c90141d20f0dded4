import type { PersistentVolumeClaim, Pod, Secret, Service } from "@kubevirt-ts/kube";
import {
  type ExportManifests,
  DEFAULT_EXPORT_TTL_MS,
  EXPORT_SERVER_PORT,
  EXPORT_SERVICE_LABEL,
  EXPORT_SERVICE_PORT,
  EXPORT_TOKEN_KEY,
  ExportDir,
  ExportEnv,
  ExportPath,
  exportProxyBase,
  exportServiceName,
} from "@kubevirt-ts/node-contract";
import {
  ExportPhase,
  ExportReason,
  MAX_EXPORT_TTL_HOURS,
  type VirtualMachine,
  type VirtualMachineExport,
  type VirtualMachineExportStatus,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  controllerRef,
  volumeCopyOf,
} from "@kubevirt-ts/kubevirt-api";
import { claimVolumes, parseDurationSeconds, vmiHoldsDisks } from "@kubevirt-ts/vm-rules";
import { restrictedContainer } from "../common/disk-copy.ts";
import { diskPodSecurityContext, onNode } from "../common/disk-pod.ts";

// What a VirtualMachineExport needs, as pure functions of what the controller sees (controller.ts acts on them), as
// KubeVirt's export controller decides it: which claims are exported and whether they can be now, the export server's
// pod, Service and Secrets, and the status with KubeVirt's phases, reasons and links.

/** The annotation on the export pod that carries its certificate, which the links hand to clients. */
export const EXPORT_CERT_ANNOTATION = "export.kubevirt-ts.io/certificate";
/** The container of the export pod. */
export const EXPORT_CONTAINER = "exportserver";
/** How often an export whose source is not ready yet looks again without an event. */
export const EXPORT_RECHECK_MS = 5_000;

/** One claim the export serves: its name in the links, and the claim the pod mounts (a snapshot's copy). */
export interface ExportedClaim {
  name: string;
  claim: string;
}

export type ExportSource =
  | { state: "available"; claims: ExportedClaim[]; vm?: VirtualMachine | undefined; node?: string | undefined }
  | { state: "waiting"; reason: string; message: string }
  | { state: "skipped"; reason: string; message: string };

export interface SourceObservation {
  exp: VirtualMachineExport;
  vm?: VirtualMachine | undefined;
  vmi?: VirtualMachineInstance | undefined;
  snapshot?: VirtualMachineSnapshot | undefined;
  content?: VirtualMachineSnapshotContent | undefined;
  claim: (name: string) => PersistentVolumeClaim | undefined;
  /** The phase of the DataVolume of this name, if there is one. */
  dataVolumePhase: (name: string) => string | undefined;
  /** A pod other than the export's own that uses the claim and has not ended, by name. */
  claimUser: (claim: string) => string | undefined;
}

/** The node of a local claim (its selected node), where the export pod must run to mount it. */
const claimNode = (claim: PersistentVolumeClaim | undefined): string | undefined =>
  claim?.metadata.annotations?.["volume.kubernetes.io/selected-node"];

/** Whether the claims all exist, are bound and filled; else why not (KubeVirt's VolumesNotPopulated). */
function claimsReady(
  o: SourceObservation,
  claims: readonly ExportedClaim[],
  of: string,
): { reason: string; message: string } | undefined {
  for (const { claim } of claims) {
    const pvc = o.claim(claim);
    const phase = o.dataVolumePhase(claim);
    if (!pvc || pvc.status?.phase !== "Bound" || (phase !== undefined && phase !== "Succeeded"))
      return {
        reason: ExportReason.VolumesNotPopulated,
        message: `Not all volumes in ${of} are populated: ${claim} is not yet`,
      };
  }
  return undefined;
}

/** Which claims the export serves, and whether it can serve them now. */
export function exportSource(o: SourceObservation): ExportSource {
  const { exp } = o;
  const ns = exp.metadata.namespace ?? "";
  const name = exp.spec.source.name;
  switch (exp.spec.source.kind) {
    case "PersistentVolumeClaim": {
      const pvc = o.claim(name);
      if (!pvc) return { state: "waiting", reason: ExportReason.PVCNotFound, message: `pvc ${ns}/${name} not found` };
      if (pvc.status?.phase !== "Bound")
        return { state: "waiting", reason: ExportReason.PVCPending, message: `pvc ${ns}/${name} is not bound yet` };
      const user = o.claimUser(name);
      if (user)
        return { state: "waiting", reason: ExportReason.InUse, message: `pvc ${ns}/${name} is in use by pod ${user}` };
      return { state: "available", claims: [{ name, claim: name }], node: claimNode(pvc) };
    }
    case "VirtualMachine": {
      const vm = o.vm;
      if (!vm)
        return {
          state: "waiting",
          reason: ExportReason.VMNotFound,
          message: `Virtual Machine ${ns}/${name} not found`,
        };
      const claims = claimVolumes(vm.spec.template.spec)
        .filter((c) => !c.ephemeral)
        .map((c) => ({ name: c.claimName, claim: c.claimName }));
      if (claims.length === 0)
        return {
          state: "skipped",
          reason: ExportReason.VMNoVolumes,
          message: `Virtual Machine ${ns}/${name} has no volumes`,
        };
      const notReady = claimsReady(o, claims, `the Virtual Machine ${ns}/${name}`);
      if (notReady) return { state: "waiting", ...notReady };
      if (vmiHoldsDisks(o.vmi))
        return {
          state: "waiting",
          reason: ExportReason.InUse,
          message: `Virtual Machine ${ns}/${name} is running`,
        };
      return { state: "available", claims, vm, node: claimNode(o.claim(claims[0]?.claim ?? "")) };
    }
    case "VirtualMachineSnapshot": {
      const { snapshot, content } = o;
      if (!snapshot)
        return {
          state: "waiting",
          reason: ExportReason.VMSnapshotNotFound,
          message: `VirtualMachineSnapshot ${ns}/${name} not found`,
        };
      if (snapshot.status?.readyToUse !== true || !content)
        return {
          state: "waiting",
          reason: ExportReason.VolumesNotPopulated,
          message: `VirtualMachineSnapshot ${ns}/${name} is not ready to use yet`,
        };
      const claims: ExportedClaim[] = [];
      for (const backup of content.spec.volumeBackups ?? []) {
        const copy = volumeCopyOf(content, backup.volumeName);
        const original = backup.persistentVolumeClaim.metadata?.name;
        if (copy?.kind !== "PersistentVolumeClaim" || original === undefined) continue;
        claims.push({ name: original, claim: copy.name });
      }
      if (claims.length === 0)
        return {
          state: "skipped",
          reason: ExportReason.VMSnapshotNoVolumes,
          message: `VirtualMachineSnapshot ${ns}/${name} holds no volume copies that can be exported`,
        };
      const notReady = claimsReady(o, claims, `the VirtualMachineSnapshot ${ns}/${name}`);
      if (notReady) return { state: "waiting", ...notReady };
      const taken = content.spec.source.virtualMachine;
      const vm: VirtualMachine | undefined = taken
        ? {
            apiVersion: "kubevirt.io/v1",
            kind: "VirtualMachine",
            metadata: { ...taken.metadata, name: taken.metadata?.name ?? name },
            spec: taken.spec,
          }
        : undefined;
      return { state: "available", claims, vm, node: claimNode(o.claim(claims[0]?.claim ?? "")) };
    }
  }
}

/** When the export ends: its creation plus its TTL (two hours unless it says otherwise, a week at most). */
export function exportDeadline(exp: VirtualMachineExport, now: Date): Date {
  const ttl = Math.min(
    exp.spec.ttlDuration ? (parseDurationSeconds(exp.spec.ttlDuration) ?? 0) * 1000 : DEFAULT_EXPORT_TTL_MS,
    MAX_EXPORT_TTL_HOURS * 3_600_000,
  );
  const created = Date.parse(exp.metadata.creationTimestamp ?? "");
  return new Date((Number.isNaN(created) ? now.getTime() : created) + ttl);
}

/** The Secret holding the token: the one the spec names, else export-token-<name>, which the controller makes. */
export const tokenSecretName = (exp: VirtualMachineExport): string =>
  exp.spec.tokenSecretRef ?? `export-token-${exp.metadata.name ?? ""}`.slice(0, 253);

/** The export's own token Secret, made when its spec names none. */
export function tokenSecret(exp: VirtualMachineExport, token: string): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: tokenSecretName(exp),
      namespace: exp.metadata.namespace,
      ownerReferences: [controllerRef(exp)],
    },
    type: "Opaque",
    data: { [EXPORT_TOKEN_KEY]: Buffer.from(token).toString("base64") },
  };
}

/** The Secret of the export server's certificate and key. */
export const certSecretName = (exp: VirtualMachineExport): string =>
  `${exportServiceName(exp.metadata.name ?? "")}-tls`;

export function certSecret(exp: VirtualMachineExport, tls: { certPem: string; keyPem: string }): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: certSecretName(exp), namespace: exp.metadata.namespace, ownerReferences: [controllerRef(exp)] },
    type: "kubernetes.io/tls",
    data: {
      "tls.crt": Buffer.from(tls.certPem).toString("base64"),
      "tls.key": Buffer.from(tls.keyPem).toString("base64"),
    },
  };
}

/** The names the export server's certificate is made for: its Service's, as a client in the cluster reaches it. */
export function serviceHosts(exp: VirtualMachineExport): string[] {
  const service = exportServiceName(exp.metadata.name ?? "");
  const ns = exp.metadata.namespace ?? "";
  return [`${service}.${ns}.svc`, `${service}.${ns}.svc.cluster.local`, `${service}.${ns}`, service];
}

/** The export's Service: port 443 to the pod's 8443, as KubeVirt's. */
export function exportService(exp: VirtualMachineExport): Service {
  const name = exportServiceName(exp.metadata.name ?? "");
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name,
      namespace: exp.metadata.namespace,
      labels: { [EXPORT_SERVICE_LABEL]: name },
      ownerReferences: [controllerRef(exp)],
    },
    spec: {
      selector: { [EXPORT_SERVICE_LABEL]: name },
      ports: [{ name: "export", protocol: "TCP", port: EXPORT_SERVICE_PORT, targetPort: EXPORT_SERVER_PORT }],
    },
  };
}

/** Where a link's URLs start: the Service's name inside the cluster, the dashboard's proxy outside. */
export interface LinkBases {
  internal: string;
  external?: string | undefined;
}

export function linkBases(exp: VirtualMachineExport, dashboardUrl: string | undefined): LinkBases {
  const internal = `https://${serviceHosts(exp)[0] ?? ""}`;
  if (!dashboardUrl) return { internal };
  const origin = new URL(dashboardUrl).origin;
  return { internal, external: `${origin}${exportProxyBase(exp.metadata.namespace ?? "", exp.metadata.name ?? "")}` };
}

/** The header Secret the manifests' DataVolumes name: KubeVirt's name. */
export const headerSecretName = (exp: VirtualMachineExport): string => `header-secret-${exp.metadata.name ?? ""}`;
const caConfigMapName = (exp: VirtualMachineExport): string => `export-ca-cm-${exp.metadata.name ?? ""}`;

/**
 * The manifests that bring the VM back from one link, as KubeVirt's export server writes them: a ConfigMap with the
 * link's certificate, and the VM whose exported disks become DataVolume templates importing from the link's gzip URLs
 * with the token header (the header Secret, served at the secret path).
 */
export function vmManifests(
  exp: VirtualMachineExport,
  vm: VirtualMachine,
  claims: readonly ExportedClaim[],
  claimOf: (name: string) => PersistentVolumeClaim | undefined,
  base: string,
  cert: string,
): unknown[] {
  const exported = new Set(claims.map((c) => c.name));
  const templates = claims.map(({ name, claim }) => {
    const pvc = claimOf(claim);
    return {
      metadata: { name },
      spec: {
        source: {
          http: {
            url: `${base}${ExportPath.gzip(name)}`,
            certConfigMap: caConfigMapName(exp),
            secretExtraHeaders: [headerSecretName(exp)],
          },
        },
        storage: {
          ...(pvc?.spec?.volumeMode ? { volumeMode: pvc.spec.volumeMode } : {}),
          resources: { requests: { storage: pvc?.spec?.resources?.requests?.storage ?? "1Gi" } },
        },
      },
    };
  });
  const volumes = (vm.spec.template.spec.volumes ?? []).map((v) => {
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    return claim !== undefined && exported.has(claim) ? { name: v.name, dataVolume: { name: claim } } : v;
  });
  const { labels, annotations } = vm.metadata;
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: caConfigMapName(exp) },
      data: { "ca.pem": cert },
    },
    {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachine",
      metadata: {
        name: vm.metadata.name,
        ...(labels ? { labels } : {}),
        ...(annotations ? { annotations } : {}),
      },
      spec: {
        ...vm.spec,
        dataVolumeTemplates: [
          ...(vm.spec.dataVolumeTemplates ?? []).filter((t) => !exported.has(t.metadata.name)),
          ...templates,
        ],
        template: { ...vm.spec.template, spec: { ...vm.spec.template.spec, volumes } },
      },
    },
  ];
}

export interface ExportPodInput {
  exp: VirtualMachineExport;
  claims: readonly ExportedClaim[];
  node?: string | undefined;
  image: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  certPem: string;
  manifests?: ExportManifests | undefined;
  deadline: Date;
}

/** The export server's pod: the importer image as export server, each claim mounted read-only. */
export function exportPod(input: ExportPodInput): Pod {
  const { exp, claims } = input;
  const name = exportServiceName(exp.metadata.name ?? "");
  const volumes = claims.map((c, i) => ({
    name: `volume-${String(i)}`,
    dir: `${ExportDir.volumes}/${c.claim}`,
    claim: c.claim,
    link: c.name,
  }));
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: exp.metadata.namespace,
      labels: { [EXPORT_SERVICE_LABEL]: name },
      annotations: { [EXPORT_CERT_ANNOTATION]: input.certPem },
      ownerReferences: [controllerRef(exp)],
    },
    spec: {
      // The server exits 0 at the export's deadline (Terminated); a crash is restarted by the kubelet.
      restartPolicy: "OnFailure",
      automountServiceAccountToken: false,
      securityContext: diskPodSecurityContext,
      ...onNode(input.node),
      containers: [
        {
          name: EXPORT_CONTAINER,
          image: input.image,
          imagePullPolicy: input.imagePullPolicy,
          env: [
            { name: ExportEnv.volumes, value: JSON.stringify(volumes.map((v) => ({ name: v.link, dir: v.dir }))) },
            { name: ExportEnv.tokenFile, value: `${ExportDir.token}/${EXPORT_TOKEN_KEY}` },
            { name: ExportEnv.certFile, value: `${ExportDir.cert}/tls.crt` },
            { name: ExportEnv.keyFile, value: `${ExportDir.cert}/tls.key` },
            { name: ExportEnv.deadline, value: input.deadline.toISOString() },
            ...(input.manifests ? [{ name: ExportEnv.manifests, value: JSON.stringify(input.manifests) }] : []),
          ],
          ports: [{ name: "export", containerPort: EXPORT_SERVER_PORT }],
          readinessProbe: {
            httpGet: { scheme: "HTTPS", path: ExportPath.ready, port: EXPORT_SERVER_PORT },
            periodSeconds: 2,
          },
          resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "256Mi" } },
          securityContext: restrictedContainer,
          volumeMounts: [
            ...volumes.map((v) => ({ name: v.name, mountPath: v.dir, readOnly: true })),
            { name: "token", mountPath: ExportDir.token, readOnly: true },
            { name: "cert", mountPath: ExportDir.cert, readOnly: true },
          ],
        },
      ],
      volumes: [
        ...volumes.map((v) => ({ name: v.name, persistentVolumeClaim: { claimName: v.claim, readOnly: true } })),
        { name: "token", secret: { secretName: tokenSecretName(exp) } },
        { name: "cert", secret: { secretName: certSecretName(exp) } },
      ],
    },
  };
}

const podReady = (pod: Pod) =>
  pod.status?.phase === "Running" &&
  (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

function link(
  base: string,
  cert: string,
  claims: readonly ExportedClaim[],
  manifests: boolean,
  which: "internal" | "external",
) {
  return {
    cert,
    volumes: claims.map(({ name }) => ({
      name,
      formats: [
        { format: "raw", url: `${base}${ExportPath.raw(name)}` },
        { format: "gzip", url: `${base}${ExportPath.gzip(name)}` },
      ],
    })),
    ...(manifests
      ? {
          manifests: [
            { type: "all", url: `${base}${ExportPath.manifests(which)}` },
            { type: "auth-header-secret", url: `${base}${ExportPath.secret(which)}` },
          ],
        }
      : {}),
  };
}

export interface StatusInput {
  exp: VirtualMachineExport;
  source: ExportSource;
  pod?: Pod | undefined;
  /** Whether the Service's EndpointSlices list the pod as ready: only then do its links answer. */
  routed: boolean;
  bases: LinkBases;
  externalCert: string;
  deadline: Date;
  now: Date;
}

/** The export's status, as KubeVirt's: the phase from the source and the pod, the Ready condition, and the links. */
export function exportStatus(input: StatusInput): VirtualMachineExportStatus {
  const { exp, source, pod, bases } = input;
  const before = exp.status?.conditions?.find((c) => c.type === "Ready");
  const ready = (status: "True" | "False", reason: string, message = "") => ({
    type: "Ready",
    status,
    reason,
    message,
    lastProbeTime: null,
    lastTransitionTime:
      before?.status === status && before.reason === reason
        ? (before.lastTransitionTime ?? input.now.toISOString())
        : input.now.toISOString(),
  });
  const status: VirtualMachineExportStatus = {
    tokenSecretRef: tokenSecretName(exp),
    ttlExpirationTime: input.deadline.toISOString(),
    serviceName: exportServiceName(exp.metadata.name ?? ""),
    ...(exp.spec.source.kind === "VirtualMachine" ? { virtualMachineName: exp.spec.source.name } : {}),
  };
  if (source.state === "skipped")
    return { ...status, phase: ExportPhase.Skipped, conditions: [ready("False", source.reason, source.message)] };
  if (source.state === "waiting")
    return { ...status, phase: ExportPhase.Pending, conditions: [ready("False", source.reason, source.message)] };
  if (source.vm?.metadata.name && exp.spec.source.kind === "VirtualMachineSnapshot")
    status.virtualMachineName = source.vm.metadata.name;
  if (!pod) return { ...status, phase: ExportPhase.Pending, conditions: [ready("False", ExportReason.Initializing)] };
  if (pod.status?.phase === "Succeeded")
    return { ...status, phase: ExportPhase.Terminated, conditions: [ready("False", ExportReason.PodCompleted)] };
  if (!podReady(pod))
    return { ...status, phase: ExportPhase.Pending, conditions: [ready("False", ExportReason.PodPending)] };
  if (!input.routed)
    return {
      ...status,
      phase: ExportPhase.Pending,
      conditions: [
        ready(
          "False",
          ExportReason.PodPending,
          `the Service ${status.serviceName ?? ""} does not route to the pod yet`,
        ),
      ],
    };
  const cert = pod.metadata.annotations?.[EXPORT_CERT_ANNOTATION] ?? "";
  const manifests = source.vm !== undefined;
  return {
    ...status,
    phase: ExportPhase.Ready,
    conditions: [ready("True", ExportReason.PodReady)],
    links: {
      internal: link(bases.internal, cert, source.claims, manifests, "internal"),
      ...(bases.external
        ? { external: link(bases.external, input.externalCert, source.claims, manifests, "external") }
        : {}),
    },
  };
}
