import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  PrintableStatus,
  VmConditionType,
  VmiConditionType,
  VmiPhase,
  type Condition,
  type VirtualMachineInstance,
  type VirtualMachine,
} from "@kubevirt-ts/kubevirt-api";

// How a VM's state reads to a person, derived once from the VM and its VMI:
// its printable status in words, a tone the dashboard gives a colour and an
// icon, the reason behind it in a sentence, and its conditions and the VMI's
// in words, apart. What the user may do now is availableActions (actions.ts).

/**
 * The colour and icon a status is shown with: running, paused, on its way (starting or stopping), stopped, or a
 * problem.
 */
export type StatusTone = "running" | "paused" | "transition" | "stopped" | "problem";

/** The statuses that are not already words. */
const STATUS_WORDS: Partial<Record<string, string>> = {
  [PrintableStatus.Terminating]: "Deleting",
  [PrintableStatus.CrashLoopBackOff]: "Crashed, restarting after a pause",
  [PrintableStatus.ErrorUnschedulable]: "Cannot be placed on a node",
  [PrintableStatus.ErrImagePull]: "Cannot pull its image",
  [PrintableStatus.ImagePullBackOff]: "Cannot pull its image, retrying",
  [PrintableStatus.ErrorPvcNotFound]: "Its disk's claim is missing",
  [PrintableStatus.WaitingForVolumeBinding]: "Waiting for its disk",
  [PrintableStatus.DataVolumeError]: "Its disk could not be filled",
  [PrintableStatus.Provisioning]: "Preparing its disks",
};

const TONES: Record<string, StatusTone> = {
  [PrintableStatus.Running]: "running",
  [PrintableStatus.Paused]: "paused",
  [PrintableStatus.Stopped]: "stopped",
  [PrintableStatus.Starting]: "transition",
  [PrintableStatus.Stopping]: "transition",
  [PrintableStatus.Terminating]: "transition",
  [PrintableStatus.Provisioning]: "transition",
  [PrintableStatus.Migrating]: "transition",
  [PrintableStatus.WaitingForVolumeBinding]: "transition",
};

export function statusInWords(printableStatus: string | undefined): string {
  const status = printableStatus ?? PrintableStatus.Stopped;
  return STATUS_WORDS[status] ?? status;
}

export function statusTone(printableStatus: string | undefined): StatusTone {
  return TONES[printableStatus ?? PrintableStatus.Stopped] ?? "problem";
}

/** The statuses the list filters by: five states and every problem together. */
export const STATUS_FILTERS = ["Running", "Stopped", "Starting", "Stopping", "Paused", "Problem"] as const;

export function matchesStatusFilter(printableStatus: string | undefined, filter: string): boolean {
  if (filter === "") return true;
  if (filter === "Problem") return statusTone(printableStatus) === "problem";
  return (printableStatus ?? PrintableStatus.Stopped) === filter;
}

const find = (conditions: readonly Condition[] | undefined, type: string): Condition | undefined =>
  conditions?.find((c) => c.type === type);
const falseWith = (conditions: readonly Condition[] | undefined, type: string): Condition | undefined => {
  const c = find(conditions, type);
  return c?.status === "False" ? c : undefined;
};

/** What the VMI's phase means while the VM starts. */
const STARTING_PHASE: Partial<Record<string, string>> = {
  [VmiPhase.Pending]: "Its launcher pod is being made.",
  [VmiPhase.Scheduling]: "Waiting for a node to take it.",
  [VmiPhase.Scheduled]: "Its node is starting the guest.",
};

/** The reason behind a status, in a sentence; undefined when the status says it all. */
export function statusReason(
  vm: Pick<VirtualMachine, "metadata" | "status">,
  vmi: Pick<VirtualMachineInstance, "metadata" | "spec" | "status"> | undefined,
): string | undefined {
  const status = vm.status?.printableStatus ?? PrintableStatus.Stopped;
  const vmConditions = vm.status?.conditions;
  const vmiConditions = vmi?.status?.conditions;
  const failure = find(vmConditions, VmConditionType.Failure);
  const failed = failure?.status === "True" ? failure.message : undefined;
  switch (status) {
    case PrintableStatus.ErrorUnschedulable:
      return falseWith(vmiConditions, VmiConditionType.PodScheduled)?.message ?? failed;
    case PrintableStatus.ErrImagePull:
    case PrintableStatus.ImagePullBackOff:
    case PrintableStatus.ErrorPvcNotFound:
      return falseWith(vmiConditions, VmiConditionType.Synchronized)?.message ?? failed;
    case PrintableStatus.DataVolumeError:
    case PrintableStatus.Provisioning:
    case PrintableStatus.WaitingForVolumeBinding:
      return falseWith(vmiConditions, VmiConditionType.DataVolumesReady)?.message ?? failed;
    case PrintableStatus.CrashLoopBackOff: {
      const start = vm.status?.startFailure;
      const nextTry = start?.retryAfterTimestamp
        ? new Date(start.retryAfterTimestamp).toLocaleTimeString()
        : "once the pause ends";
      return start
        ? `It failed to start ${String(start.consecutiveFailCount ?? 1)} time(s) in a ` +
            `row; the next try is at ${nextTry}.`
        : failed;
    }
    case PrintableStatus.Starting:
      return failed ?? STARTING_PHASE[vmi?.status?.phase ?? VmiPhase.Pending];
    case PrintableStatus.Stopping:
      return vmi?.metadata.deletionTimestamp
        ? "The guest is shutting down; it " +
            `has ${String(vmi.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS)} s before it ` +
            "is turned off. Force stop turns it off now."
        : "The guest is asked to shut down.";
    case PrintableStatus.Terminating:
      return "The VM is being deleted, and its instance with it.";
    case PrintableStatus.Paused: {
      const paused = find(vmiConditions, VmiConditionType.Paused);
      return paused?.reason === "PausedIOError"
        ? "The guest was paused by an I/O error on a disk."
        : "The guest is paused: its CPUs do not run. Unpause resumes it where it was.";
    }
    default:
      return failed;
  }
}

/** A condition as a person reads it: a label, whether it is good news, and the message that came with it. */
export interface ConditionInWords {
  type: string;
  label: string;
  tone: "good" | "bad" | "neutral";
  message: string | undefined;
}

type Words = { label: string; tone: ConditionInWords["tone"] } | undefined;

/** Each known condition's words by its status; undefined: not worth showing (a False Paused, an absent Failure). */
const CONDITION_WORDS: Record<string, (c: Condition) => Words> = {
  [VmConditionType.Ready]: (c) =>
    c.status === "True"
      ? { label: "Ready", tone: "good" }
      : { label: c.reason === "VMINotExists" ? "Not running" : "Not ready yet", tone: "neutral" },
  [VmConditionType.Failure]: (c) => (c.status === "True" ? { label: "Failing", tone: "bad" } : undefined),
  [VmConditionType.Paused]: (c) => (c.status === "True" ? { label: "Paused", tone: "neutral" } : undefined),
  [VmConditionType.RestartRequired]: (c) =>
    c.status === "True" ? { label: "Restart needed for changes to take effect", tone: "neutral" } : undefined,
  [VmiConditionType.Synchronized]: (c) =>
    c.status === "True"
      ? { label: "In step with its launcher", tone: "good" }
      : { label: "Not in step with its launcher", tone: "bad" },
  [VmiConditionType.SoftwareEmulation]: (c) =>
    c.status === "True" ? { label: "Runs with software emulation (no KVM on its node)", tone: "neutral" } : undefined,
  [VmiConditionType.AgentConnected]: (c) =>
    c.status === "True"
      ? { label: "Guest agent connected", tone: "good" }
      : { label: "No guest agent", tone: "neutral" },
  [VmiConditionType.AccessCredentialsSynchronized]: (c) =>
    c.status === "True"
      ? { label: "Access credentials in the guest", tone: "good" }
      : { label: "Access credentials not in the guest", tone: "bad" },
  [VmiConditionType.PodScheduled]: (c) =>
    c.status === "True" ? { label: "Placed on a node", tone: "good" } : { label: "Not placed on a node", tone: "bad" },
  [VmiConditionType.DataVolumesReady]: (c) =>
    c.status === "True" ? { label: "Disks ready", tone: "good" } : { label: "Disks not ready", tone: "neutral" },
  LiveMigratable: (c) =>
    c.status === "True"
      ? { label: "Can be live-migrated", tone: "neutral" }
      : { label: "Cannot be live-migrated", tone: "neutral" },
};

/** Conditions in words, in their order, leaving out those that say nothing (a False Paused). */
export function conditionsInWords(conditions: readonly Condition[] | undefined): ConditionInWords[] {
  return (conditions ?? []).flatMap((c) => {
    const known = CONDITION_WORDS[c.type];
    const words = known ? known(c) : { label: `${c.type}: ${c.status}`, tone: "neutral" as const };
    if (!words) return [];
    // The message of a Ready VM says nothing the label does not.
    const message = c.message && !(c.type === VmConditionType.Ready && c.status === "True") ? c.message : undefined;
    return [{ type: c.type, label: words.label, tone: words.tone, message }];
  });
}
