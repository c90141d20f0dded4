import { findCondition, removeCondition, setCondition } from "@kubevirt-ts/kube";
import {
  type Condition,
  PrintableStatus,
  type RunStrategy,
  type StateChangeRequest,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VmStatus,
  VmConditionType,
  VmiConditionType,
  VmiPhase,
} from "@kubevirt-ts/kubevirt-api";
import { type DataVolumesState, RESTART_REQUIRED_MESSAGE, isFinalPhase, isMigrating } from "@kubevirt-ts/vm-rules";
import type { VmAction } from "./decide.ts";

// A VirtualMachine's status, derived from what was observed and from what the
// sync did about it: never from which event woke the controller up.

export interface VmStatusInput {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  runStrategy: RunStrategy;
  requests: StateChangeRequest[];
  action: VmAction;
  startFailure: VmStatus["startFailure"];
  syncError: { reason: string; message: string } | undefined;
  now: Date;
  /**
   * The instancetype and preference the VM runs with, captured in ControllerRevisions (undefined: none, or not found).
   */
  instancetypeRef?: VmStatus["instancetypeRef"];
  /** A claim the VM's volumes name exists but is not bound yet. */
  unboundClaims?: boolean;
  /** Whether the DataVolumes the VM's volumes name are in; undefined when it names none. */
  dataVolumes?: DataVolumesState | undefined;
  /** A start was wanted and held back until the DataVolumes are in. */
  startHeld?: boolean;
  preferenceRef?: VmStatus["preferenceRef"];
  /** The VM's template has changed since its running VMI was started from it (vm-rules' start-revision.ts). */
  restartRequired?: boolean;
}

function vmiCondition(vmi: VirtualMachineInstance | undefined, type: string): Condition | undefined {
  return findCondition(vmi?.status?.conditions, type);
}

/** KubeVirt's printable status, checked in its order: the first that applies wins. */
export function printableStatus(input: VmStatusInput): PrintableStatus {
  const { vm, vmi, action, runStrategy, requests } = input;
  const phase = vmi?.status?.phase;
  const stopWanted = action.kind === "delete" || requests[0]?.action === "Stop" || runStrategy === "Halted";
  if (vm.metadata.deletionTimestamp) return PrintableStatus.Terminating;
  if (vmi && !isFinalPhase(phase) && (vmi.metadata.deletionTimestamp || stopWanted)) return PrintableStatus.Stopping;
  if (phase === VmiPhase.Running) {
    if (vmi && isMigrating(vmi)) return PrintableStatus.Migrating;
    return vmiCondition(vmi, VmiConditionType.Paused)?.status === "True"
      ? PrintableStatus.Paused
      : PrintableStatus.Running;
  }
  const synchronized = vmiCondition(vmi, VmiConditionType.Synchronized);
  const live = vmi !== undefined && !isFinalPhase(phase);
  if (live && synchronized?.status === "False" && synchronized.reason === "FailedPvcNotFound")
    return PrintableStatus.ErrorPvcNotFound;
  if (input.dataVolumes?.reason === "DataVolumeError") return PrintableStatus.DataVolumeError;
  const scheduled = vmiCondition(vmi, VmiConditionType.PodScheduled);
  if (live && scheduled?.status === "False" && scheduled.reason === "Unschedulable")
    return PrintableStatus.ErrorUnschedulable;
  // A DataVolume still filling its claim, whether or not the VM is to run, as KubeVirt's.
  if (input.dataVolumes?.reason === "NotAllDVsReady" || input.startHeld === true) return PrintableStatus.Provisioning;
  const startWanted = live || action.kind === "create" || (requests[0]?.action === "Start" && runStrategy !== "Halted");
  if (startWanted && input.unboundClaims === true) return PrintableStatus.WaitingForVolumeBinding;
  if (live && synchronized?.status === "False") {
    if (synchronized.reason === "ErrImagePull") return PrintableStatus.ErrImagePull;
    if (synchronized.reason === "ImagePullBackOff") return PrintableStatus.ImagePullBackOff;
  }
  if (vmi && !isFinalPhase(phase)) return PrintableStatus.Starting;
  if (action.kind === "backoff") return PrintableStatus.CrashLoopBackOff;
  if (action.kind === "create" || (requests[0]?.action === "Start" && runStrategy !== "Halted"))
    return PrintableStatus.Starting;
  return PrintableStatus.Stopped;
}

function conditions(input: VmStatusInput): Condition[] {
  const { vm, vmi, syncError, now } = input;
  let list = vm.status?.conditions ?? [];
  const ready = vmiCondition(vmi, VmiConditionType.Ready);
  list = setCondition<Condition>(
    list,
    vmi
      ? ready
        ? // As KubeVirt's: the VMI's own Ready condition, as it is (a Ready VMI's has no reason to carry over).
          {
            type: VmConditionType.Ready,
            status: ready.status,
            ...(ready.reason ? { reason: ready.reason } : {}),
            ...(ready.message ? { message: ready.message } : {}),
          }
        : { type: VmConditionType.Ready, status: "False", reason: "VMINotReady", message: "The VMI is not ready yet." }
      : {
          type: VmConditionType.Ready,
          status: "False",
          reason: "VMINotExists",
          message: "The VM has no VMI: it is not running.",
        },
    now,
  );
  list = syncError
    ? setCondition<Condition>(
        list,
        { type: VmConditionType.Failure, status: "True", reason: syncError.reason, message: syncError.message },
        now,
      )
    : removeCondition(list, VmConditionType.Failure);
  const paused = vmiCondition(vmi, VmiConditionType.Paused);
  list =
    paused?.status === "True"
      ? setCondition<Condition>(
          list,
          {
            type: VmConditionType.Paused,
            status: "True",
            reason: paused.reason ?? "PausedByUser",
            message: paused.message ?? "The VMI is paused.",
          },
          now,
        )
      : removeCondition(list, VmConditionType.Paused);
  // As KubeVirt's: no reason, and its message word for word.
  list =
    input.restartRequired === true
      ? setCondition<Condition>(
          list,
          { type: VmConditionType.RestartRequired, status: "True", message: RESTART_REQUIRED_MESSAGE },
          now,
        )
      : removeCondition(list, VmConditionType.RestartRequired);
  return list;
}

export function deriveVmStatus(input: VmStatusInput): VmStatus {
  const { vm, vmi, runStrategy, requests, startFailure } = input;
  const status: VmStatus = {
    ...vm.status,
    printableStatus: printableStatus(input),
    created: vmi !== undefined,
    ready: vmiCondition(vmi, VmiConditionType.Ready)?.status === "True",
    // As KubeVirt's: first recorded when a VMI is made, so that a VM held before its first start (its DataVolumes
    // still filling) still takes its strategy's first start afterwards.
    runStrategy:
      vm.status?.runStrategy !== undefined || vmi !== undefined || input.action.kind === "create"
        ? runStrategy
        : undefined,
    conditions: conditions(input),
    observedGeneration: vm.metadata.generation,
    desiredGeneration: vm.metadata.generation,
  };
  if (requests.length > 0) status.stateChangeRequests = requests;
  else delete status.stateChangeRequests;
  if (startFailure) status.startFailure = startFailure;
  else delete status.startFailure;
  if (input.instancetypeRef) status.instancetypeRef = input.instancetypeRef;
  else delete status.instancetypeRef;
  if (input.preferenceRef) status.preferenceRef = input.preferenceRef;
  else delete status.preferenceRef;
  return status;
}
