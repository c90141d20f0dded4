import {
  SnapshotIndication,
  SnapshotPhase,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
} from "@kubevirt-ts/kubevirt-api";
import type { ActionAvailability } from "./actions.ts";

// Whether a VM's snapshot can be taken or restored now, and why not: the dashboard's API refuses with these answers
// and its Snapshots tab disables its buttons with them. The dashboard restores a snapshot onto its own VM only while
// that VM is stopped (KubeVirt's targetReadinessPolicy would wait for it, or stop it; the user is asked to stop it
// instead), and only once the snapshot is ready to use.

type VmFacts = Pick<VirtualMachine, "status">;
type SnapshotFacts = Pick<VirtualMachineSnapshot, "status" | "metadata">;

const notNow = (reason: string): ActionAvailability => ({ available: false, reason, by: "state" });

/** Whether a snapshot of the VM can be taken now: not while a snapshot or a restore of it is under way. */
export function snapshotAvailability(vm: VmFacts): ActionAvailability {
  const taking = vm.status?.snapshotInProgress;
  if (taking) return notNow(`snapshot ${taking} of the VM is under way; wait until it is done`);
  const restoring = vm.status?.restoreInProgress;
  if (restoring) return notNow(`restore ${restoring} of the VM is under way; wait until it is done`);
  return { available: true };
}

/** KubeVirt's reason for refusing an unpause while a snapshot of the VM is under way (virt-api's, word for word). */
export const SNAPSHOT_IN_PROGRESS = "VM snapshot is in progress";

/**
 * Whether the VM's instance may be unpaused now, as far as snapshots go: as KubeVirt's virt-api, not while a snapshot
 * of the VM is under way. A snapshot of a guest without an agent pauses it while its disks are copied (docs/adr/0027)
 * and resumes it after: an unpause in between would let the copy tear.
 */
export function unpauseAvailability(vm: VmFacts | undefined): ActionAvailability {
  const taking = vm?.status?.snapshotInProgress;
  if (taking)
    return notNow(
      `${SNAPSHOT_IN_PROGRESS}: snapshot ${taking} of the VM is under way and resumes the VM when it is done; ` +
        "wait for it, or delete the snapshot",
    );
  return { available: true };
}

/** Whether the snapshot can be restored at all now: once it is ready to use, and never once it failed. */
export function snapshotRestorability(snapshot: SnapshotFacts): ActionAvailability {
  if (snapshot.metadata.deletionTimestamp) return notNow("the snapshot is being deleted");
  const phase = snapshot.status?.phase;
  if (phase === SnapshotPhase.Failed)
    return notNow(
      `the snapshot failed${snapshot.status?.error?.message ? `: ${snapshot.status.error.message}` : ""}; ` +
        "take another",
    );
  if (snapshot.status?.readyToUse !== true)
    return notNow(`the snapshot is not ready to use yet (${phase ?? "not started"}); wait until it is`);
  return { available: true };
}

/**
 * Whether a snapshot can be restored onto its own VM now: the snapshot restorable (snapshotRestorability, which the
 * dashboard gets from the API) and the VM stopped (no running instance), with no snapshot or restore of it under way.
 */
export function restoreInPlaceAvailability(
  restorable: ActionAvailability,
  vm: VmFacts,
  vmi: Pick<VirtualMachineInstance, "status"> | undefined,
): ActionAvailability {
  if (!restorable.available) return restorable;
  if (vmi) return notNow("stop the VM first: a snapshot is restored onto its VM only while the VM is stopped");
  return snapshotAvailability(vm);
}

/** Whether a VM's instance holds its disks: it exists and has not ended. A VM is exported only while it does not. */
export const vmiHoldsDisks = (vmi: Pick<VirtualMachineInstance, "status"> | undefined): boolean =>
  vmi !== undefined && vmi.status?.phase !== "Succeeded" && vmi.status?.phase !== "Failed";

/** Whether the VM's disks can be exported now (a VirtualMachineExport of it served): while it is stopped. */
export function exportAvailability(vmi: Pick<VirtualMachineInstance, "status"> | undefined): ActionAvailability {
  if (vmiHoldsDisks(vmi))
    return notNow("stop the VM first: its disks are exported only while it is stopped, as they change while it runs");
  return { available: true };
}

/**
 * What each indication says of a snapshot, in a sentence: the snapshot controller writes it in
 * status.sourceIndications and the dashboard shows it on the indication's badge.
 */
export const SNAPSHOT_INDICATION_MEANINGS: Record<SnapshotIndication, string> = {
  [SnapshotIndication.Online]: "The VM was running when the snapshot was taken.",
  [SnapshotIndication.GuestAgent]:
    "Its file systems were frozen through the guest agent while its disks were copied: the snapshot is consistent " +
    "for its file systems.",
  [SnapshotIndication.NoGuestAgent]:
    "The guest has no agent connected: it was paused while its disks were copied, so the snapshot is " +
    "crash-consistent, as after a power cut.",
  [SnapshotIndication.QuiesceTimeout]:
    "The guest's file systems stayed frozen too long and were thawed before the copy ended.",
  [SnapshotIndication.Paused]: "The VM was paused when the snapshot was taken.",
  [SnapshotIndication.PartialSnapshot]: "Some of the VM's volumes are not in the snapshot.",
};

/** NoGuestAgent's sentence for a guest the user had paused already (with Paused): nothing more was done to it. */
export const NO_GUEST_AGENT_PAUSED_MEANING =
  "The guest has no agent connected; it was paused already, so its disks were copied as they were.";

/** The sentence of each of a snapshot's indications, NoGuestAgent's as it reads beside Paused; unknown ones dropped. */
export function indicationMeanings(indications: readonly string[]): Partial<Record<SnapshotIndication, string>> {
  const known = (i: string): i is SnapshotIndication => Object.hasOwn(SNAPSHOT_INDICATION_MEANINGS, i);
  const paused = indications.includes(SnapshotIndication.Paused);
  return Object.fromEntries(
    indications
      .filter(known)
      .map((i) => [
        i,
        i === SnapshotIndication.NoGuestAgent && paused
          ? NO_GUEST_AGENT_PAUSED_MEANING
          : SNAPSHOT_INDICATION_MEANINGS[i],
      ]),
  );
}
