import { randomBytes } from "node:crypto";
import {
  type EndpointSlice,
  type EventRecorder,
  type Informer,
  type KubeClient,
  type KubeObject,
  type PersistentVolumeClaim,
  type Pod,
  type Reconcile,
  type ResourceType,
  isAlreadyExists,
  SERVICE_NAME_LABEL,
  isNotFound,
  resources,
  slicesRouteToPod,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  type DataVolume,
  type VirtualMachine,
  type VirtualMachineExport,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { exportServiceName } from "@kubevirt-ts/node-contract";
import { selfSignedServingCertificate } from "@kubevirt-ts/runtime";
import {
  EXPORT_RECHECK_MS,
  type ExportSource,
  certSecret,
  certSecretName,
  exportDeadline,
  exportPod,
  exportService,
  exportSource,
  exportStatus,
  headerSecretName,
  linkBases,
  serviceHosts,
  tokenSecret,
  vmManifests,
} from "./decide.ts";
import { BY_CLAIM } from "../vmi/claim-events.ts";

// The VirtualMachineExport controller, KubeVirt's export controller role: for each export it makes the token Secret
// (unless the spec names one), the Service, and, while the source can be read (a stopped VM, a ready snapshot, a claim
// no pod uses), the export server's pod with a certificate made for it; it deletes the pod when the source is taken
// back (the VM starts) and the export when its TTL is over. The decisions are in decide.ts; docs/data-protection.md
// says what an export serves.

/** KubeVirt's event reasons. */
const Reason = {
  PodCreated: "ExporterPodCreated",
  PodDeleted: "ExporterPodDeleted",
  ServiceCreated: "ServiceCreated",
} as const;

export interface ExportConfig {
  image: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
}

export interface ExportControllerDeps {
  client: KubeClient;
  exports: Informer<VirtualMachineExport>;
  /** The export servers' pods (labelled EXPORT_SERVICE_LABEL). */
  exportPods: Informer<Pod>;
  /** Launcher and importer pods, what may be using a claim, each indexed BY_CLAIM. */
  claimUsers: readonly Informer<Pod>[];
  /** The export Services' EndpointSlices (labelled EXPORT_SERVICE_LABEL, copied from the Service). */
  endpointSlices: Informer<EndpointSlice>;
  vms: Informer<VirtualMachine>;
  vmis: Informer<VirtualMachineInstance>;
  claims: Informer<PersistentVolumeClaim>;
  snapshots: Informer<VirtualMachineSnapshot>;
  contents: Informer<VirtualMachineSnapshotContent>;
  dataVolumes?: Informer<DataVolume> | undefined;
  recorder: EventRecorder;
  now: () => Date;
  /** The export server's image (the importer's); without it exports wait with the reason. */
  server?: ExportConfig | undefined;
  /** The dashboard's address, which proxies the external links; without it there are none. */
  dashboardUrl?: string | undefined;
  /** The certificate that verifies the dashboard, handed out with the external links. */
  externalCert: string;
}

/** The index of exports by what they read: `<namespace>/<kind>/<name>`. */
export const EXPORTS_BY_SOURCE = "source";
export const exportsBySource = (e: VirtualMachineExport): string[] => {
  const ns = e.metadata.namespace ?? "";
  return [`${ns}/${e.spec.source.kind}/${e.spec.source.name}`];
};

/** The index of exports by their Service: `<namespace>/<service>`, which EndpointSlices name. */
export const EXPORTS_BY_SERVICE = "service";
export const exportsByService = (e: VirtualMachineExport): string[] => [
  `${e.metadata.namespace ?? ""}/${exportServiceName(e.metadata.name ?? "")}`,
];

/** The index of EndpointSlices by the Service they belong to: `<namespace>/<service>`, as EXPORTS_BY_SERVICE. */
export const SLICES_BY_SERVICE = "service";
export const slicesByService = (s: EndpointSlice): string[] => {
  const service = s.metadata.labels?.[SERVICE_NAME_LABEL];
  return service ? [`${s.metadata.namespace ?? ""}/${service}`] : [];
};

const notFoundIsFine = (error: unknown) => {
  if (!isNotFound(error)) throw error;
};

/** A token as virtctl makes one: random letters and digits. */
const newToken = () => randomBytes(24).toString("base64url").replace(/[-_]/g, "x");

export function createExportReconciler(deps: ExportControllerDeps): Reconcile {
  const { client, exports, exportPods, vms, vmis, claims, snapshots, contents, recorder, now } = deps;
  const type = kubevirtResources.virtualMachineExports;

  async function create(kind: ResourceType, object: KubeObject): Promise<boolean> {
    try {
      await client.create(kind, object.metadata.namespace, object);
      return true;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      return false;
    }
  }

  function claimUser(ns: string, claim: string, own: string): string | undefined {
    for (const informer of deps.claimUsers)
      for (const pod of informer.byIndex(BY_CLAIM, `${ns}/${claim}`)) {
        if (pod.metadata.name === own) continue;
        if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") continue;
        return pod.metadata.name;
      }
    return undefined;
  }

  /** Whether the export's Service routes to its pod: an EndpointSlice of it lists the pod as ready. */
  function routed(ns: string, service: string, pod: Pod | undefined): boolean {
    if (!pod) return false;
    return slicesRouteToPod(deps.endpointSlices.byIndex(SLICES_BY_SERVICE, `${ns}/${service}`), pod);
  }

  function observe(exp: VirtualMachineExport): ExportSource {
    const ns = exp.metadata.namespace ?? "";
    const { kind, name } = exp.spec.source;
    const own = exportServiceName(exp.metadata.name ?? "");
    const snapshot = kind === "VirtualMachineSnapshot" ? snapshots.get(`${ns}/${name}`) : undefined;
    const contentName = snapshot?.status?.virtualMachineSnapshotContentName;
    return exportSource({
      exp,
      vm: kind === "VirtualMachine" ? vms.get(`${ns}/${name}`) : undefined,
      vmi: kind === "VirtualMachine" ? vmis.get(`${ns}/${name}`) : undefined,
      snapshot,
      content: contentName ? contents.get(`${ns}/${contentName}`) : undefined,
      claim: (c) => claims.get(`${ns}/${c}`),
      dataVolumePhase: (c) => deps.dataVolumes?.get(`${ns}/${c}`)?.status?.phase,
      claimUser: (c) => claimUser(ns, c, own),
    });
  }

  /** Makes the export server's pod: a new certificate (its Secret replaced), the manifests, the pod. */
  async function startServer(
    exp: VirtualMachineExport,
    source: Extract<ExportSource, { state: "available" }>,
    server: ExportConfig,
    deadline: Date,
  ) {
    const ns = exp.metadata.namespace ?? "";
    // The Service first (kept across pods; made again if someone deleted it), then the certificate and the pod.
    if (await create(resources.services, exportService(exp)))
      recorder.record(
        exp,
        "Normal",
        Reason.ServiceCreated,
        `Created service ${ns}/${exportServiceName(exp.metadata.name ?? "")}`,
      );
    const hosts = serviceHosts(exp);
    const tls = selfSignedServingCertificate({
      commonName: hosts[0] ?? "",
      dnsNames: hosts,
      validForMs: deadline.getTime() - now().getTime() + 24 * 3_600_000,
    });
    await client.delete(resources.secrets, ns, certSecretName(exp)).catch(notFoundIsFine);
    await client.create(resources.secrets, ns, certSecret(exp, tls));
    const bases = linkBases(exp, deps.dashboardUrl);
    const claimOf = (c: string) => claims.get(`${ns}/${c}`);
    const manifests = source.vm
      ? {
          internal: vmManifests(exp, source.vm, source.claims, claimOf, bases.internal, tls.certPem),
          ...(bases.external
            ? { external: vmManifests(exp, source.vm, source.claims, claimOf, bases.external, deps.externalCert) }
            : {}),
          headerSecretName: headerSecretName(exp),
        }
      : undefined;
    const pod = exportPod({
      exp,
      claims: source.claims,
      node: source.node,
      image: server.image,
      imagePullPolicy: server.imagePullPolicy,
      certPem: tls.certPem,
      manifests,
      deadline,
    });
    await client.create(resources.pods, ns, pod);
    recorder.record(exp, "Normal", Reason.PodCreated, `Created exporter pod ${ns}/${pod.metadata.name ?? ""}`);
  }

  return async (key) => {
    const exp = exports.get(key);
    if (!exp || exp.metadata.deletionTimestamp) return undefined;
    const ns = exp.metadata.namespace ?? "";
    const at = now();
    const deadline = exportDeadline(exp, at);
    if (at >= deadline) {
      // KubeVirt's TTL: the export goes, and with it everything it owns.
      await client.delete(type, ns, exp.metadata.name ?? "").catch(notFoundIsFine);
      return undefined;
    }
    const server = deps.server;
    const source: ExportSource = server
      ? observe(exp)
      : {
          state: "waiting",
          reason: "NoExportServer",
          message:
            "exports are served by kubevirt-ts's importer image, which the chart configures where it serves " +
            "DataVolumes itself (dataVolumes.serve): this cluster's CDI serves them",
        };
    if (!exp.spec.tokenSecretRef && exp.status?.tokenSecretRef === undefined)
      await create(resources.secrets, tokenSecret(exp, newToken()));
    const podName = exportServiceName(exp.metadata.name ?? "");
    let pod = exportPods.get(`${ns}/${podName}`);
    const ours = pod?.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === exp.metadata.uid);
    if (pod && !ours) {
      // Not this export's pod (a leftover of an earlier export of the name, or someone's own): not served from.
      pod = undefined;
    } else if (pod && !pod.metadata.deletionTimestamp) {
      const failed = pod.status?.phase === "Failed";
      if (source.state !== "available" || failed) {
        await client.delete(resources.pods, ns, podName).catch(notFoundIsFine);
        recorder.record(
          exp,
          "Warning",
          Reason.PodDeleted,
          failed
            ? `Exporter pod ${ns}/${podName} failed`
            : `Exporter pod ${ns}/${podName} stopped: ${source.state === "available" ? "" : source.message}`,
        );
        pod = undefined;
      }
    } else if (!pod && source.state === "available" && server) {
      await startServer(exp, source, server, deadline);
    }
    await writeStatusIfChanged(
      client,
      type,
      exp,
      exportStatus({
        exp,
        source,
        pod: pod?.metadata.deletionTimestamp ? undefined : pod,
        routed: routed(ns, podName, pod),
        bases: linkBases(exp, deps.dashboardUrl),
        externalCert: deps.externalCert,
        deadline,
        now: at,
      }),
    );
    const untilDeadline = Math.max(1_000, deadline.getTime() - at.getTime());
    return { requeueAfterMs: source.state === "waiting" ? Math.min(EXPORT_RECHECK_MS, untilDeadline) : untilDeadline };
  };
}
