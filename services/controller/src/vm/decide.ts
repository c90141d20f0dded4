import { type RunStrategy, type StateChangeRequest, type VmStatus, VmiPhase } from "@kubevirt-ts/kubevirt-api";
import { isFinalPhase } from "@kubevirt-ts/vm-rules";

// What a VirtualMachine's controller should do about its VMI, decided from
// what it observes alone: the run strategy, the pending start/stop requests,
// the VMI (if any) and the crash-loop back-off. Pure, so the whole table of
// KubeVirt's run strategy semantics is tested without a cluster.

export interface ObservedVmi {
  uid: string;
  phase: string | undefined;
  deleting: boolean;
  /** It reached Running at some time (its phase transitions say so). */
  ran: boolean;
}

export interface VmObservation {
  runStrategy: RunStrategy;
  /** The strategy in effect when status was last written; undefined before the first write. */
  previousRunStrategy: RunStrategy | undefined;
  requests: readonly StateChangeRequest[];
  vmi: ObservedVmi | undefined;
  startFailure: VmStatus["startFailure"];
  /**
   * The VirtualMachineRestore rewriting the VM (its status.restoreInProgress): as KubeVirt's, the VM is not started
   * meanwhile; a start request waits until the restore is done.
   */
  restoreInProgress?: string | undefined;
  /**
   * The VirtualMachineSnapshot being taken of the VM (its status.snapshotInProgress): a stopped VM is not started
   * while its disks are copied, which a start would make inconsistent (docs/adr/0027).
   */
  snapshotInProgress?: string | undefined;
  now: Date;
}

export type VmAction =
  | { kind: "none" }
  | { kind: "create"; paused?: true }
  /**
   * failedEarly: the VMI ended before it ever ran, which counts as a start failure for the crash-loop back-off (as
   * KubeVirt counts them); a guest that ran and then failed is restarted at once.
   */
  | { kind: "delete"; uid: string; failed: boolean; failedEarly: boolean }
  | { kind: "backoff"; untilMs: number };

export interface VmDecision {
  action: VmAction;
  /** The requests still pending once the action is done. */
  requests: StateChangeRequest[];
}

const MIN_BACKOFF_MS = 10_000;
const MAX_BACKOFF_MS = 300_000;

/** KubeVirt-like crash-loop back-off: 10 s, doubling with each consecutive failure, at most 5 minutes. */
export function backoffMs(consecutiveFailures: number): number {
  return Math.min(MIN_BACKOFF_MS * 2 ** Math.max(consecutiveFailures - 1, 0), MAX_BACKOFF_MS);
}

/** Creates the VMI, paused when a start request asks so (virtctl start --paused). */
function create(o: VmObservation, requests: StateChangeRequest[], paused = false): VmDecision {
  if (o.restoreInProgress !== undefined || o.snapshotInProgress !== undefined) return none(requests);
  const retryAfter = o.startFailure?.retryAfterTimestamp ? Date.parse(o.startFailure.retryAfterTimestamp) : 0;
  if (retryAfter > o.now.getTime()) return { action: { kind: "backoff", untilMs: retryAfter }, requests };
  return { action: paused ? { kind: "create", paused: true } : { kind: "create" }, requests };
}

const none = (requests: StateChangeRequest[]): VmDecision => ({ action: { kind: "none" }, requests });
const remove = (vmi: ObservedVmi, requests: StateChangeRequest[]): VmDecision =>
  vmi.deleting
    ? none(requests)
    : {
        action: {
          kind: "delete",
          uid: vmi.uid,
          failed: vmi.phase === VmiPhase.Failed,
          failedEarly: isFinalPhase(vmi.phase) && !vmi.ran,
        },
        requests,
      };

/** The first pending request decides, if there is one; it is dropped once it has taken effect. */
function decideRequest(o: VmObservation, request: StateChangeRequest, rest: StateChangeRequest[]): VmDecision {
  const { vmi } = o;
  if (request.action === "Stop") {
    // A stop for a VMI that is already gone, or for an older VMI, is done.
    if (!vmi || (request.uid !== undefined && request.uid !== vmi.uid)) return decide({ ...o, requests: rest });
    return remove(vmi, o.requests.slice());
  }
  // A start request under Halted waits for the run strategy the same start sets next (a paused start of a Halted VM).
  if (o.runStrategy === "Halted") return none(o.requests.slice());
  if (vmi && !isFinalPhase(vmi.phase)) return decide({ ...o, requests: rest });
  if (vmi) return remove(vmi, o.requests.slice());
  return create(o, o.requests.slice(), request.data?.paused === "true");
}

export function decide(o: VmObservation): VmDecision {
  const [first, ...rest] = o.requests;
  if (first) return decideRequest(o, first, rest);
  const requests: StateChangeRequest[] = [];
  const { vmi } = o;
  const strategyChanged = o.previousRunStrategy !== o.runStrategy;
  switch (o.runStrategy) {
    case "Always":
      if (!vmi) return create(o, requests);
      return isFinalPhase(vmi.phase) ? remove(vmi, requests) : none(requests);
    case "RerunOnFailure":
      // Restarted after failure, never after success (a succeeded VMI goes, as KubeVirt's, and the VM is Stopped);
      // started when the VM first runs with this strategy.
      if (!vmi) return strategyChanged ? create(o, requests) : none(requests);
      if (vmi.phase === VmiPhase.Failed) return remove(vmi, [{ action: "Start" }]);
      if (vmi.phase === VmiPhase.Succeeded) return remove(vmi, requests);
      return none(requests);
    case "Once":
      // Started once when the VM takes this strategy; never restarted.
      return !vmi && strategyChanged ? create(o, requests) : none(requests);
    case "Manual":
      return none(requests);
    case "Halted":
      return vmi ? remove(vmi, requests) : none(requests);
  }
}
