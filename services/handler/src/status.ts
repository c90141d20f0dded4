import { kubeTime, removeCondition, setCondition } from "@kubevirt-ts/kube";
import type { DomainStatus } from "@kubevirt-ts/launcher/client";
import { type Condition, type VirtualMachineInstance, VmiConditionType, VmiPhase, type VmiStatus } from "@kubevirt-ts/kubevirt-api";

// The VMI status the handler reports from its launcher's domain: a pure
// function of the VMI, the domain's state and the launcher pod's addresses.

/** The domain as its launcher reports it. */
export type ObservedDomain = DomainStatus;

export interface ObservedPod {
  podIP?: string;
  podIPs?: { ip: string }[];
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

/** What the guest agent reported of the guest's OS; undefined when no agent answered. */
export type ObservedGuestOs = VmiStatus["guestOSInfo"];

export function handlerStatus(vmi: VirtualMachineInstance, domain: ObservedDomain, pod: ObservedPod, now: Date, guestOs?: ObservedGuestOs): VmiStatus {
  const previous = vmi.status ?? {};
  const phase = phaseOf((previous.phase ?? VmiPhase.Scheduled), domain);
  const status: VmiStatus = { ...previous, phase };
  if (phase !== previous.phase) {
    status.phaseTransitionTimestamps = [...(previous.phaseTransitionTimestamps ?? []), { phase, phaseTransitionTimestamp: kubeTime(now) }];
  }
  let conditions: Condition[] = previous.conditions ?? [];
  const running = phase === VmiPhase.Running;
  const paused = domain.state === "Paused";
  conditions = setCondition<Condition>(
    conditions,
    running && !paused
      ? { type: VmiConditionType.Ready, status: "True" }
      : { type: VmiConditionType.Ready, status: "False", reason: paused ? "Paused" : running ? "NotRunning" : "GuestNotRunning", message: paused ? "The VMI is paused." : `The guest is ${domain.state}.` },
    now,
  );
  conditions = paused
    ? setCondition<Condition>(conditions, { type: VmiConditionType.Paused, status: "True", reason: "PausedByUser", message: "The VMI was paused." }, now)
    : removeCondition(conditions, VmiConditionType.Paused);
  if (domain.domainType === "qemu") {
    conditions = setCondition<Condition>(conditions, { type: VmiConditionType.SoftwareEmulation, status: "True", reason: "SoftwareEmulation", message: "KVM is unusable on the node: the guest runs with QEMU's software emulation." }, now);
  }
  if (running && guestOs) {
    status.guestOSInfo = guestOs;
    conditions = setCondition<Condition>(conditions, { type: VmiConditionType.AgentConnected, status: "True" }, now);
  } else if (!running) {
    delete status.guestOSInfo;
    conditions = removeCondition(conditions, VmiConditionType.AgentConnected);
  }
  status.conditions = conditions;
  // Masquerade: the guest is reached at its pod's address.
  const ips = pod.podIPs?.map((p) => p.ip) ?? (pod.podIP ? [pod.podIP] : []);
  if (running && ips.length > 0) {
    status.interfaces = (vmi.spec.domain.devices.interfaces ?? []).map((iface) => ({ name: iface.name, ipAddress: ips[0], ipAddresses: ips, infoSource: "domain" }));
  }
  return status;
}
