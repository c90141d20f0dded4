import { type PersistentVolumeClaim, type Pod, podReady, removeCondition, setCondition } from "@kubevirt-ts/kube";
import { CLAIM_POD_PHASE, CLAIM_POD_READY, IMPORTER_CONTAINER } from "@kubevirt-ts/node-contract";
import {
  type Condition,
  type DataVolume,
  DataVolumeConditionType,
  DataVolumePhase,
  type DataVolumeStatus,
} from "@kubevirt-ts/kubevirt-api";

// What the DataVolume controller does about one DataVolume, and the status
// that follows, decided from what it observes alone (pure, so CDI's phases
// are tested without a cluster). The claim's cdi.kubevirt.io/storage.pod.phase
// annotation, as CDI's, is what says the disk is in: written only once the
// importer exited 0 after renaming its whole disk into place.

export type DataVolumeAction =
  | { kind: "none" }
  | { kind: "createClaim" }
  | { kind: "adoptClaim" }
  | { kind: "createPod" }
  | { kind: "markSucceeded" }
  | { kind: "annotateClaim"; annotations: Record<string, string> }
  | { kind: "deletePod"; pod: Pod };

export interface DataVolumeObservation {
  dv: DataVolume;
  /** The claim of the DataVolume's name, if there is one. */
  claim: PersistentVolumeClaim | undefined;
  /** Whether the DataVolume controls the claim. */
  claimOwned: boolean;
  /** Whether the DataVolume may take over a claim of its name it did not make (cdi.kubevirt.io/allowClaimAdoption). */
  adoptionAllowed: boolean;
  /**
   * The DataVolume's importer pod, if there is one: the pod the controller made (importerPodMismatch), never another.
   */
  pod: Pod | undefined;
  /**
   * A pod of the importer's name that is not the controller's, and why (importerPodMismatch); it stands in the
   * importer's way.
   */
  foreignPod?: { name: string; why: string } | undefined;
  /** Why the importer cannot be made yet (its source claim is missing, say), if so. */
  blocked: string | undefined;
  /** The progress the importer last reported, as 45.12%. */
  progress: string | undefined;
  now: Date;
}

export const claimSucceeded = (claim: PersistentVolumeClaim | undefined): boolean =>
  claim?.metadata.annotations?.[CLAIM_POD_PHASE] === DataVolumePhase.Succeeded;

export function decideDataVolume(o: DataVolumeObservation): DataVolumeAction {
  if (o.dv.metadata.deletionTimestamp) return { kind: "none" };
  if (!o.claim) return o.blocked ? { kind: "none" } : { kind: "createClaim" };
  // A claim the DataVolume did not make is taken over as it is (its disk already in) when the DataVolume allows it.
  if (!o.claimOwned) return o.adoptionAllowed ? { kind: "adoptClaim" } : { kind: "none" };
  if (claimSucceeded(o.claim)) return o.pod ? { kind: "deletePod", pod: o.pod } : { kind: "none" };
  if (!o.pod) return o.blocked || o.foreignPod ? { kind: "none" } : { kind: "createPod" };
  if (o.pod.status?.phase === "Succeeded") return { kind: "markSucceeded" };
  // An upload's claim says, as CDI's, whether its upload server takes an upload (virtctl image-upload waits for it).
  if (isUpload(o.dv)) {
    const annotations = uploadClaimAnnotations(o.pod);
    if (Object.entries(annotations).some(([k, v]) => o.claim?.metadata.annotations?.[k] !== v))
      return { kind: "annotateClaim", annotations };
  }
  return { kind: "none" };
}

const isClone = (dv: DataVolume) => dv.spec.source?.pvc !== undefined;
const isUpload = (dv: DataVolume) => dv.spec.source?.upload !== undefined;

/** CDI's annotations on an upload's claim: its upload pod's phase, and whether it is ready. */
export const uploadClaimAnnotations = (pod: Pod): Record<string, string> => ({
  [CLAIM_POD_PHASE]: pod.status?.phase ?? "Pending",
  [CLAIM_POD_READY]: String(podReady(pod)),
});

/**
 * The reason, on the Running condition and a Warning event, of a pod in the importer's place that the controller did
 * not make.
 */
export const FOREIGN_POD_REASON = "ImporterPodNotOurs";

/** What the DataVolume says of a pod in its importer's place that the controller did not make, and what to do. */
export const foreignPodMessage = (foreign: { name: string; why: string }): string =>
  `the pod ${foreign.name} has the importer's name and owner but is not the importer the controller made ` +
  `(${foreign.why}); nothing is read from it: delete it, and the controller makes its own`;

/** Why the importer is not running: an image it cannot pull, or the reason its last run ended with. */
export function importerTrouble(pod: Pod): { reason: string; message: string } | undefined {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const pull = statuses
    .map((c) => c.state?.waiting)
    .find((w) => w?.reason === "ErrImagePull" || w?.reason === "ImagePullBackOff" || w?.reason === "InvalidImageName");
  if (pull)
    return { reason: "ImagePullFailed", message: pull.message ?? `${pull.reason ?? ""}: the image cannot be pulled` };
  const importer = pod.status?.containerStatuses?.find((c) => c.name === IMPORTER_CONTAINER);
  const ended = importer?.state?.terminated ?? (importer?.state?.waiting ? importer.lastState?.terminated : undefined);
  if (ended && ended.exitCode !== 0)
    return {
      reason: "Error",
      message: (ended.message ?? ended.reason ?? `the importer exited ${String(ended.exitCode)}`).trim(),
    };
  return undefined;
}

export function deriveDataVolumeStatus(o: DataVolumeObservation): DataVolumeStatus {
  const { dv, claim, pod, now } = o;
  const previous = dv.status ?? {};
  const status: DataVolumeStatus = { ...previous, claimName: dv.metadata.name };
  let conditions: Condition[] = previous.conditions ?? [];
  const bound = claim?.status?.phase === "Bound";
  conditions = setCondition<Condition>(
    conditions,
    !claim
      ? {
          type: DataVolumeConditionType.Bound,
          status: "Unknown",
          reason: "NotFound",
          message: `No PVC found${o.blocked ? `: ${o.blocked}` : ""}`,
        }
      : !o.claimOwned && !o.adoptionAllowed
        ? {
            type: DataVolumeConditionType.Bound,
            status: "False",
            reason: "ErrResourceExists",
            message:
              `A claim named ${dv.metadata.name ?? ""} exists and is not the DataVolume's; delete it, or ` +
              "let the DataVolume take it over with the annotation cdi.kubevirt.io/allowClaimAdoption: " +
              `"true"`,
          }
        : bound
          ? { type: DataVolumeConditionType.Bound, status: "True", reason: "Bound", message: "PVC Bound" }
          : {
              type: DataVolumeConditionType.Bound,
              status: "False",
              reason: "Pending",
              message: "PVC Pending (it binds when the importer pod is scheduled)",
            },
    now,
  );
  if (claim && (claimSucceeded(claim) || (!o.claimOwned && o.adoptionAllowed))) {
    status.phase = DataVolumePhase.Succeeded;
    status.progress = "100.0%";
    conditions = setCondition<Condition>(
      conditions,
      { type: DataVolumeConditionType.Running, status: "False", reason: "Completed", message: "Import Complete" },
      now,
    );
    conditions = setCondition<Condition>(
      conditions,
      { type: DataVolumeConditionType.Ready, status: "True", reason: "", message: "" },
      now,
    );
    status.conditions = conditions;
    return status;
  }
  const scheduled = isClone(dv)
    ? DataVolumePhase.CloneScheduled
    : isUpload(dv)
      ? DataVolumePhase.UploadScheduled
      : DataVolumePhase.ImportScheduled;
  // An upload is UploadReady while its server takes uploads, and until the disk is in.
  const inProgress = isClone(dv) ? DataVolumePhase.CloneInProgress : DataVolumePhase.ImportInProgress;
  status.phase =
    !claim || !pod
      ? DataVolumePhase.Pending
      : isUpload(dv)
        ? podReady(pod) || pod.status?.phase === "Succeeded"
          ? DataVolumePhase.UploadReady
          : scheduled
        : pod.status?.phase === "Running" || pod.status?.phase === "Succeeded"
          ? inProgress
          : scheduled;
  status.progress = o.progress ?? previous.progress ?? "N/A";
  const restarts = pod?.status?.containerStatuses?.find((c) => c.name === IMPORTER_CONTAINER)?.restartCount;
  if (restarts !== undefined) status.restartCount = restarts;
  const trouble = pod ? importerTrouble(pod) : undefined;
  conditions = trouble
    ? setCondition<Condition>(conditions, { type: DataVolumeConditionType.Running, status: "False", ...trouble }, now)
    : pod?.status?.phase === "Running"
      ? setCondition<Condition>(
          conditions,
          { type: DataVolumeConditionType.Running, status: "True", reason: "Pod is running", message: "" },
          now,
        )
      : o.foreignPod
        ? setCondition<Condition>(
            conditions,
            {
              type: DataVolumeConditionType.Running,
              status: "False",
              reason: FOREIGN_POD_REASON,
              message: foreignPodMessage(o.foreignPod),
            },
            now,
          )
        : o.blocked
          ? setCondition<Condition>(
              conditions,
              { type: DataVolumeConditionType.Running, status: "False", reason: "Blocked", message: o.blocked },
              now,
            )
          : removeCondition(conditions, DataVolumeConditionType.Running);
  conditions = setCondition<Condition>(
    conditions,
    { type: DataVolumeConditionType.Ready, status: "False", reason: "", message: "" },
    now,
  );
  status.conditions = conditions;
  return status;
}
