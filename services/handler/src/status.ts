import { type PodStatus, findCondition, kubeTime, removeCondition, setCondition } from "@kubevirt-ts/kube";
import type { DomainStatus } from "@kubevirt-ts/launcher-protocol";
import {
  type Condition,
  DEFAULT_GRACE_PERIOD_SECONDS,
  type GuestOsInfo,
  type VirtualMachineInstance,
  VmiConditionType,
  VmiPhase,
  type VmiStatus,
} from "@kubevirt-ts/kubevirt-api";
import { diskTargets, withPhase } from "@kubevirt-ts/vm-rules";

// The VMI status the handler reports from its launcher's domain: a pure
// function of the VMI, the domain's state and the launcher pod's addresses.
// phaseOf is the handler's part of the VMI phase state machine (vm-rules'
// vmi-phase.ts): from Scheduled on, by the domain's state.

/** The domain as its launcher reports it. */
export type ObservedDomain = DomainStatus;

/** The launcher pod's addresses, and its conditions (its readiness is the guest's readiness probe's). */
export type ObservedPod = Pick<PodStatus, "podIP" | "podIPs" | "conditions">;

/**
 * Why a running, unpaused guest is not ready, if it is not: with a readiness probe, the guest is ready while the
 * launcher pod is (the kubelet runs the probe on it), as KubeVirt takes the VMI's Ready condition from its pod's.
 */
function probeNotReady(vmi: VirtualMachineInstance, pod: ObservedPod): Condition | undefined {
  if (!vmi.spec.readinessProbe) return undefined;
  const ready = pod.conditions?.find((c) => c.type === "Ready");
  if (ready?.status === "True") return undefined;
  return {
    type: VmiConditionType.Ready,
    status: "False",
    reason: "GuestNotReady",
    message:
      "The guest has not passed its readiness probe yet; the launcher pod's events (kubectl describe pod) say why.",
  };
}

function phaseOf(current: VmiPhase, domain: ObservedDomain): VmiPhase {
  switch (domain.state) {
    case "Running":
    case "Blocked":
    case "Paused":
    case "PMSuspended":
    case "Shutdown":
      return VmiPhase.Running;
    case "Shutoff":
      return VmiPhase.Succeeded;
    case "Crashed":
      return VmiPhase.Failed;
    case "NoDomain":
      return current;
  }
}

export function handlerStatus(
  vmi: VirtualMachineInstance,
  domain: ObservedDomain,
  pod: ObservedPod,
  now: Date,
  guestOs?: GuestOsInfo,
): VmiStatus {
  const previous = vmi.status ?? {};
  const phase = phaseOf(previous.phase ?? VmiPhase.Scheduled, domain);
  const status = withPhase(previous, phase, kubeTime(now));
  let conditions: Condition[] = previous.conditions ?? [];
  const running = phase === VmiPhase.Running;
  const paused = domain.state === "Paused";
  conditions = setCondition<Condition>(
    conditions,
    running && !paused
      ? (probeNotReady(vmi, pod) ?? { type: VmiConditionType.Ready, status: "True" })
      : {
          type: VmiConditionType.Ready,
          status: "False",
          reason: paused ? "Paused" : running ? "NotRunning" : "GuestNotRunning",
          message: paused ? "The VMI is paused." : `The guest is ${domain.state}.`,
        },
    now,
  );
  conditions = paused
    ? setCondition<Condition>(
        conditions,
        { type: VmiConditionType.Paused, status: "True", reason: "PausedByUser", message: "The VMI was paused." },
        now,
      )
    : removeCondition(conditions, VmiConditionType.Paused);
  // From the domain the launcher defined: emulated only when it is, and no longer once a domain runs with KVM (a
  // migration's target).
  if (domain.domainType === "qemu") {
    conditions = setCondition<Condition>(
      conditions,
      {
        type: VmiConditionType.SoftwareEmulation,
        status: "True",
        reason: "SoftwareEmulation",
        message: "KVM is unusable on the node: the guest runs with QEMU's software emulation.",
      },
      now,
    );
  } else if (domain.domainType === "kvm") {
    conditions = removeCondition(conditions, VmiConditionType.SoftwareEmulation);
  }
  if (running && guestOs) {
    status.guestOSInfo = guestOs;
    conditions = setCondition<Condition>(conditions, { type: VmiConditionType.AgentConnected, status: "True" }, now);
  } else if (!running) {
    status.guestOSInfo = {};
    conditions = removeCondition(conditions, VmiConditionType.AgentConnected);
  }
  // As KubeVirt's reasons (its events' names): whether the guest has the access credentials given through its agent.
  const credentials = domain.accessCredentials;
  if (running && credentials) {
    conditions = setCondition<Condition>(
      conditions,
      credentials.synchronized
        ? {
            type: VmiConditionType.AccessCredentialsSynchronized,
            status: "True",
            reason: "AccessCredentialsSyncSuccess",
            message: "The guest has its access credentials.",
          }
        : {
            type: VmiConditionType.AccessCredentialsSynchronized,
            status: "False",
            reason: "AccessCredentialsSyncFailed",
            message: credentials.message,
          },
      now,
    );
  }
  if (running && domain.fsFreezeStatus) status.fsFreezeStatus = domain.fsFreezeStatus;
  else delete status.fsFreezeStatus;
  // The launcher answered: a failure the handler reported earlier is over.
  if (isLauncherFailure(findCondition(conditions, VmiConditionType.Synchronized)))
    conditions = removeCondition(conditions, VmiConditionType.Synchronized);
  status.conditions = conditions;
  // Masquerade: the guest is reached at its pod's address.
  const ips = pod.podIPs?.map((p) => p.ip) ?? (pod.podIP ? [pod.podIP] : []);
  if (running && ips.length > 0) {
    status.interfaces = (vmi.spec.domain.devices.interfaces ?? []).map((iface) => ({
      name: iface.name,
      ipAddress: ips[0],
      ipAddresses: ips,
      infoSource: "domain",
    }));
  }
  // Each volume's device in the guest, once its domain runs, as KubeVirt's handler reports it from the domain.
  if (running && status.volumeStatus) {
    const targets = diskTargets(vmi.spec);
    status.volumeStatus = status.volumeStatus.map((v) => ({ ...v, target: targets.get(v.name) ?? v.target }));
  }
  return status;
}

/** The longest launcher error message written into a condition. */
const MAX_FAILURE_MESSAGE = 1024;

/** A failure of the VMI's launcher: its reason is a word starting with "Launcher" (see LauncherError). */
export interface LauncherFailure {
  reason: string;
  message: string;
}

const isLauncherFailure = (condition: Condition | undefined) =>
  condition?.status === "False" && (condition.reason?.startsWith("Launcher") ?? false);

/**
 * The VMI's status when its launcher failed, broke the protocol or did not
 * answer: Synchronized False with the reason and what happened. Only this
 * VMI is affected; the handler tries it again with back-off.
 */
export function launcherFailedStatus(vmi: VirtualMachineInstance, failure: LauncherFailure, now: Date): VmiStatus {
  const previous = vmi.status ?? {};
  const message =
    failure.message.length > MAX_FAILURE_MESSAGE
      ? `${failure.message.slice(0, MAX_FAILURE_MESSAGE - 1)}…`
      : failure.message;
  return {
    ...previous,
    conditions: setCondition<Condition>(
      previous.conditions,
      { type: VmiConditionType.Synchronized, status: "False", reason: failure.reason, message },
      now,
    ),
  };
}

/**
 * Whether a VMI being deleted has had its whole grace period to shut down (0 after a forced stop): its guest is then
 * turned off.
 */
export function stopOverdue(vmi: Pick<VirtualMachineInstance, "metadata" | "spec">, now: Date): boolean {
  const since = Date.parse(vmi.metadata.deletionTimestamp ?? "");
  if (Number.isNaN(since)) return false;
  return now.getTime() >= since + (vmi.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS) * 1000;
}
