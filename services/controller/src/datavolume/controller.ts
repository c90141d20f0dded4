import {
  type EventRecorder,
  type Informer,
  type KubeClient,
  type PersistentVolumeClaim,
  type Pod,
  type Reconcile,
  WrittenVersions,
  isAlreadyExists,
  isNotFound,
  resources,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import { ALLOW_CLAIM_ADOPTION } from "@kubevirt-ts/vm-rules";
import {
  CLAIM_POD_PHASE,
  CLAIM_POD_READY,
  CLAIM_POPULATED_FOR,
  IMPORTER_PROGRESS_PORT,
  importProgress,
  uploadKeySecretName,
} from "@kubevirt-ts/node-contract";
import {
  type DataVolume,
  DataVolumePhase,
  EventReason,
  Kind,
  type VirtualMachine,
  kubevirtResources,
  controllerRef,
} from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import { controllerOf } from "../common/owner.ts";
import { fetchBoundedText } from "../common/bounded-fetch.ts";
import {
  type DataVolumeAction,
  type DataVolumeObservation,
  FOREIGN_POD_REASON,
  decideDataVolume,
  deriveDataVolumeStatus,
  foreignPodMessage,
} from "./decide.ts";
import {
  type ImporterConfig,
  claimNode,
  dataVolumeClaim,
  importDiskBytes,
  importerPod,
  importerPodMismatch,
  importerPodName,
  uploadKeySecret,
} from "./importer-pod.ts";

// kubevirt-ts's DataVolume controller, for clusters without CDI: for each
// DataVolume, its claim, then an importer pod that fills the claim, then
// the claim marked Succeeded and the pod removed, with CDI's phases, progress
// and conditions in the DataVolume's status.

export interface DataVolumeControllerDeps {
  client: KubeClient;
  dataVolumes: Informer<DataVolume>;
  claims: Informer<PersistentVolumeClaim>;
  /** Importer pods. */
  pods: Informer<Pod>;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
  importer: ImporterConfig;
}

/** How often a running import's progress is read. */
const PROGRESS_MS = 3_000;

/**
 * The most of an importer's /metrics read, in bytes, and how long the read may take. The importer serves about 7.5 KiB
 * (Node's default metrics, its progress line last); a peer that sends more, or streams for ever, is cut off there.
 */
const IMPORTER_METRICS_MAX_BYTES = 16 * 1024;
const IMPORTER_METRICS_TIMEOUT_MS = 2_000;

/**
 * An importer's /metrics text, or undefined while it does not answer (starting or ending: its progress stays as last
 * read).
 */
async function fetchMetrics(url: string): Promise<string | undefined> {
  const read = await fetchBoundedText(url, {
    maxBytes: IMPORTER_METRICS_MAX_BYTES,
    timeoutMs: IMPORTER_METRICS_TIMEOUT_MS,
  });
  return "text" in read ? read.text : undefined;
}

export function createDataVolumeReconciler(deps: DataVolumeControllerDeps): Reconcile {
  const { client, dataVolumes, claims, pods, recorder, log, now } = deps;

  /** Why the importer cannot be made yet: the claim to copy is missing, or its size is unknown. */
  function blocked(dv: DataVolume): string | undefined {
    const source = dv.spec.source?.pvc;
    if (source && !claims.get(`${dv.metadata.namespace ?? ""}/${source.name}`))
      return `the source claim ${source.namespace}/${source.name} does not exist; create it, or fix spec.source.pvc`;
    return undefined;
  }

  /**
   * The node of a bound claim of the VM that owns the DataVolume (its template's other volumes), if one is bound yet.
   */
  async function nodeOfVmClaims(dv: DataVolume): Promise<string | undefined> {
    const owner = controllerOf(dv);
    if (owner?.kind !== Kind.VirtualMachine) return undefined;
    const vm = await client.find<VirtualMachine>(kubevirtResources.virtualMachines, dv.metadata.namespace, owner.name);
    if (vm?.metadata.uid !== owner.uid) return undefined;
    const names = (vm.spec.template.spec.volumes ?? [])
      .flatMap((v) => [v.dataVolume?.name, v.persistentVolumeClaim?.claimName])
      .filter((n): n is string => n !== undefined && n !== dv.metadata.name);
    return names
      .map((name) => claimNode(claims.get(`${dv.metadata.namespace ?? ""}/${name}`)))
      .find((node) => node !== undefined);
  }

  async function execute(o: DataVolumeObservation, action: DataVolumeAction): Promise<void> {
    const { dv } = o;
    const namespace = dv.metadata.namespace;
    const source = dv.spec.source?.pvc ? claims.get(`${namespace ?? ""}/${dv.spec.source.pvc.name}`) : undefined;
    switch (action.kind) {
      case "none":
        return;
      case "createClaim": {
        const claim = dataVolumeClaim(dv, source);
        if (!claim) return;
        try {
          await client.create(resources.persistentVolumeClaims, namespace, claim);
          recorder.record(dv, "Normal", EventReason.SuccessfulCreate, `Created PVC ${dv.metadata.name ?? ""}`);
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
        return;
      }
      case "adoptClaim": {
        const claim = o.claim;
        if (!claim) return;
        await client.update(resources.persistentVolumeClaims, {
          ...claim,
          metadata: {
            ...claim.metadata,
            ownerReferences: [...(claim.metadata.ownerReferences ?? []), controllerRef(dv)],
            annotations: { ...claim.metadata.annotations, [CLAIM_POPULATED_FOR]: dv.metadata.name ?? "" },
          },
        });
        recorder.record(
          dv,
          "Normal",
          "ClaimAdopted",
          `Took over the existing PVC ${claim.metadata.name ?? ""} as it is`,
        );
        return;
      }
      case "createPod": {
        const bytes = importDiskBytes(dv, source);
        if (bytes === undefined) return;
        // An upload pod's key, which the upload proxy presents to it: derived from the master key and the DataVolume's
        // uid (virt-api derives it again), kept in a Secret the DataVolume owns (one left by an earlier pod is kept).
        if (dv.spec.source?.upload) {
          await client
            .create(resources.secrets, namespace, uploadKeySecret(dv, deps.importer.uploadMasterKey))
            .catch((error: unknown) => {
              if (!isAlreadyExists(error)) throw error;
            });
        }
        // A source claim binds the pod to its node already; otherwise it goes where the VM's other claims are.
        const node = source ? undefined : await nodeOfVmClaims(dv);
        await client
          .create(resources.pods, namespace, importerPod(dv, bytes, deps.importer, node))
          .catch((error: unknown) => {
            if (!isAlreadyExists(error)) throw error;
          });
        return;
      }
      case "markSucceeded": {
        const claim = o.claim;
        if (!claim) return;
        const upload = dv.spec.source?.upload !== undefined;
        const annotations = {
          ...claim.metadata.annotations,
          [CLAIM_POD_PHASE]: DataVolumePhase.Succeeded,
          ...(upload ? { [CLAIM_POD_READY]: "false" } : {}),
        };
        await client.update(resources.persistentVolumeClaims, {
          ...claim,
          metadata: { ...claim.metadata, annotations },
        });
        recorder.record(
          dv,
          "Normal",
          upload ? "UploadSucceeded" : "ImportSucceeded",
          upload ? "Upload Successful" : "Import Successful",
        );
        return;
      }
      case "annotateClaim": {
        const claim = o.claim;
        if (!claim) return;
        await client.update(resources.persistentVolumeClaims, {
          ...claim,
          metadata: { ...claim.metadata, annotations: { ...claim.metadata.annotations, ...action.annotations } },
        });
        return;
      }
      case "deletePod": {
        const gone = (error: unknown) => {
          if (!isNotFound(error)) throw error;
        };
        await client
          .delete(resources.pods, namespace, action.pod.metadata.name ?? "", { uid: action.pod.metadata.uid })
          .catch(gone);
        // The upload is in: its key opens nothing any more.
        if (dv.spec.source?.upload)
          await client.delete(resources.secrets, namespace, uploadKeySecretName(dv.metadata.name ?? "")).catch(gone);
        return;
      }
    }
  }

  const written = new WrittenVersions();
  return async (key) => {
    const dv = dataVolumes.get(key);
    if (!dv) {
      written.forget(key);
      return undefined;
    }
    if (written.isStale(key, dv.metadata.resourceVersion)) return undefined;
    const namespace = dv.metadata.namespace ?? "";
    const claim = claims.get(key);
    // Only the pod the controller made is the importer (importerPodMismatch says how it is told apart); another in its
    // place is reported on the DataVolume, and nothing is read from it.
    const named = pods.get(`${namespace}/${importerPodName(dv)}`);
    const source = dv.spec.source?.pvc ? claims.get(`${namespace}/${dv.spec.source.pvc.name}`) : undefined;
    const why = !named
      ? undefined
      : controllerOf(named)?.uid !== dv.metadata.uid
        ? "the DataVolume does not control it"
        : importerPodMismatch(named, importerPod(dv, importDiskBytes(dv, source) ?? 0, deps.importer));
    const pod = named && why === undefined ? named : undefined;
    const foreignPod =
      named && why !== undefined ? { name: `${namespace}/${named.metadata.name ?? ""}`, why } : undefined;
    if (foreignPod && !dv.status?.conditions?.some((c) => c.reason === FOREIGN_POD_REASON))
      recorder.record(dv, "Warning", FOREIGN_POD_REASON, foreignPodMessage(foreignPod));
    const running = pod?.status?.phase === "Running" && pod.status.podIP;
    const progress = running
      ? importProgress(
          (await fetchMetrics(`http://${pod.status?.podIP ?? ""}:${String(IMPORTER_PROGRESS_PORT)}/metrics`)) ?? "",
        )
      : undefined;
    const observation: DataVolumeObservation = {
      dv,
      claim,
      claimOwned: claim !== undefined && controllerOf(claim)?.uid === dv.metadata.uid,
      adoptionAllowed: dv.metadata.annotations?.[ALLOW_CLAIM_ADOPTION] === "true",
      pod,
      foreignPod,
      blocked: blocked(dv),
      progress,
      now: now(),
    };
    const action = decideDataVolume(observation);
    await execute(observation, action);
    const status = deriveDataVolumeStatus(observation);
    const updated = await writeStatusIfChanged(client, kubevirtResources.dataVolumes, dv, status);
    if (updated) written.wrote(key, dv.metadata.resourceVersion);
    if (status.phase !== dv.status?.phase) log.info("DataVolume phase", { dataVolume: key, phase: status.phase });
    return running ? { requeueAfterMs: PROGRESS_MS } : undefined;
  };
}
