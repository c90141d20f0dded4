import { DEFAULT_FILESYSTEM_OVERHEAD, alignUpToMiB, diskBytesOnClaim } from "./claims.ts";
import {
  Label,
  controllerRef,
  parseQuantity,
  CDI_API_VERSION,
  CDI_GROUP,
  type DataVolume,
  DataVolumeConditionType,
  DataVolumePhase,
  type DataVolumeSpec,
  type DataVolumeTemplate,
  type VmiSpec,
} from "@kubevirt-ts/kubevirt-api";

// KubeVirt's rules for the DataVolumes a VM names, and CDI's for the claim a
// DataVolume makes: shared by the VM and VMI controllers (which create a VM's
// DataVolumes from its dataVolumeTemplates and wait for them) and by the
// DataVolume controller kubevirt-ts runs where CDI is not installed.

/** CDI's annotation letting a DataVolume take over a claim of its name that already exists. */
export const ALLOW_CLAIM_ADOPTION = `${CDI_GROUP}/allowClaimAdoption`;

/**
 * The DataVolume a VM creates from one of its dataVolumeTemplates, as KubeVirt's: the template's name, owned by the VM.
 */
export function dataVolumeFromTemplate(
  vm: { apiVersion: string; kind: string; metadata: { name?: string; namespace?: string; uid?: string } },
  template: DataVolumeTemplate,
): DataVolume {
  return {
    apiVersion: CDI_API_VERSION,
    kind: "DataVolume",
    metadata: {
      name: template.metadata.name,
      namespace: vm.metadata.namespace,
      labels: { ...template.metadata.labels, [Label.CreatedBy]: vm.metadata.uid ?? "" },
      annotations: { ...template.metadata.annotations, [ALLOW_CLAIM_ADOPTION]: "true" },
      ownerReferences: [controllerRef(vm)],
    },
    spec: structuredClone(template.spec),
  };
}

/** The DataVolumes a VMI's volumes name, by name (each one's claim has its name). */
export function dataVolumeNames(spec: Pick<VmiSpec, "volumes">): string[] {
  return [...new Set((spec.volumes ?? []).flatMap((v) => (v.dataVolume ? [v.dataVolume.name] : [])))];
}

/**
 * Whether a VM may start on the DataVolume, as KubeVirt's: its disk is in, or it waits for the VM's pod to bind its
 * claim.
 */
export function dataVolumeReady(dv: Pick<DataVolume, "status">): boolean {
  const phase = dv.status?.phase;
  return (
    phase === DataVolumePhase.Succeeded ||
    phase === DataVolumePhase.WaitForFirstConsumer ||
    phase === DataVolumePhase.PendingPopulation
  );
}

/**
 * Why the DataVolume failed (KubeVirt's DataVolumeError): its phase is Failed, or its importer stopped with an error.
 */
export function dataVolumeError(dv: Pick<DataVolume, "status">): string | undefined {
  const running = dv.status?.conditions?.find((c) => c.type === DataVolumeConditionType.Running);
  if (dv.status?.phase === DataVolumePhase.Failed) return running?.message ?? "the DataVolume failed";
  if (running?.status === "False" && (running.reason === "Error" || running.reason === "ImagePullFailed"))
    return running.message ?? running.reason;
  return undefined;
}

export interface DataVolumesState {
  ready: boolean;
  reason: "AllDVsReady" | "NotAllDVsReady" | "DataVolumeNotFound" | "DataVolumeError";
  message: string;
}

/**
 * Whether a VMI's DataVolumes let it start (its DataVolumesReady condition, as KubeVirt's), or undefined when it names
 * none. `found` holds the DataVolumes of its namespace it names, by name.
 */
export function dataVolumesState(
  spec: Pick<VmiSpec, "volumes">,
  found: ReadonlyMap<string, Pick<DataVolume, "status">>,
): DataVolumesState | undefined {
  const names = dataVolumeNames(spec);
  if (names.length === 0) return undefined;
  const missing = names.filter((n) => !found.has(n));
  if (missing.length > 0)
    return {
      ready: false,
      reason: "DataVolumeNotFound",
      message: `DataVolume ${missing.join(", ")} does not exist; create it, or name it in the VM's dataVolumeTemplates`,
    };
  const failed = names.flatMap((n) => {
    const error = dataVolumeError(found.get(n) ?? {});
    return error ? [`${n}: ${error}`] : [];
  });
  if (failed.length > 0) return { ready: false, reason: "DataVolumeError", message: `DataVolume ${failed.join("; ")}` };
  const waiting = names.filter((n) => !dataVolumeReady(found.get(n) ?? {}));
  if (waiting.length > 0) {
    const phases = waiting.map((n) => {
      const status = found.get(n)?.status;
      return (
        `${n} (${status?.phase ?? "Pending"}` +
        (status?.progress && status.progress !== "N/A" ? ` ${status.progress}` : "") +
        ")"
      );
    });
    return {
      ready: false,
      reason: "NotAllDVsReady",
      message: `Not all of the VMI's DataVolumes are populated yet: ${phases.join(", ")}`,
    };
  }
  return { ready: true, reason: "AllDVsReady", message: "All of the VMI's DataVolumes are populated" };
}

/** The size a DataVolume asks for, in bytes (its claim's with `pvc`, its disk's with `storage`), or undefined. */
function requestedBytes(spec: DataVolumeSpec): number | undefined {
  const requested = spec.pvc?.resources?.requests.storage ?? spec.storage?.resources?.requests.storage;
  return requested === undefined ? undefined : parseQuantity(requested);
}

/**
 * The size of the claim a DataVolume makes: with `pvc`, what it asks for; with `storage`, the disk's size (rounded up
 * to 1 MiB) plus room for the file system's overhead, as CDI inflates it; undefined without a size.
 */
export function claimRequestBytes(
  spec: DataVolumeSpec,
  overhead = Number(DEFAULT_FILESYSTEM_OVERHEAD),
): number | undefined {
  const bytes = requestedBytes(spec);
  if (bytes === undefined || spec.pvc) return bytes;
  return Math.ceil(alignUpToMiB(bytes) / (1 - overhead));
}

/**
 * The size of the disk a DataVolume's importer writes: with `storage`, the size asked for (rounded up to 1 MiB); with
 * `pvc`, what its claim holds less the file system's overhead (diskBytesOnClaim), as CDI sizes it. `sourceBytes` is
 * the size of a cloned claim, for a clone that names no size.
 */
export function dataVolumeDiskBytes(spec: DataVolumeSpec, sourceBytes?: number): number | undefined {
  const bytes = requestedBytes(spec);
  if (bytes !== undefined && !spec.pvc) return alignUpToMiB(bytes);
  const claim = bytes ?? sourceBytes;
  return claim === undefined ? undefined : diskBytesOnClaim(claim);
}
