import {
  PrintableStatus,
  type StreamKind,
  VmiConditionType,
  VmiPhase,
  type VmiDomainAction,
  podNetworkInterface,
  type VirtualMachineInstance,
  type VirtualMachine,
} from "@kubevirt-ts/kubevirt-api";
import { statusInWords, statusTone } from "./vm-view.ts";
import { unpauseAvailability } from "./snapshots.ts";
import { isFinalPhase } from "./vmi-phase.ts";
import { type VmRequestAction, type VmRequestOptions, alreadyRunning, planVmRequest } from "./vm-requests.ts";

// One answer to "can this action run on this VM now, and why not": the API
// refuses with it, the dashboard enables its buttons from it, and the handler
// refuses domain actions and consoles with it. The rules are KubeVirt's
// virt-api subresource handlers': start, stop and restart as planVmRequest
// plans them for each run strategy (in KubeVirt's words), pause and soft
// reboot of a paused VMI refused, unpause of one that is not paused, consoles
// and domain actions only on a Running VMI.

/** Every action a user may ask of a VM, in the API's and dashboard's names. */
export const VM_ACTIONS = [
  "start",
  "stop",
  "forceStop",
  "restart",
  "pause",
  "unpause",
  "softReboot",
  "reset",
  "console",
  "vnc",
  "delete",
] as const;
export type VmActionName = (typeof VM_ACTIONS)[number];

/** Each action in words, as in "Cannot <words> web-1" or "You may not <words> VMs". */
export const ACTION_WORDS: Record<VmActionName, string> = {
  start: "start",
  stop: "stop",
  forceStop: "force stop",
  restart: "restart",
  pause: "pause",
  unpause: "unpause",
  softReboot: "soft reboot",
  reset: "reset",
  console: "open the serial console of",
  vnc: "open the display (VNC) of",
  delete: "delete",
};

/**
 * Whether an action can run now. When it cannot, the reason in words, and
 * whether the VM's state stands in the way ("state": it may pass, HTTP 409)
 * or its spec ("spec": it lasts until the spec changes, HTTP 400/412).
 */
export type ActionAvailability = { available: true } | { available: false; reason: string; by: RefusedBy };
export type RefusedBy = "state" | "spec";

type VmFacts = Pick<VirtualMachine, "metadata" | "spec" | "status">;
type VmiFacts = Pick<VirtualMachineInstance, "metadata" | "spec" | "status">;

const AVAILABLE: ActionAvailability = { available: true };
const notNow = (reason: string): ActionAvailability => ({ available: false, reason, by: "state" });
const notWithThisSpec = (reason: string): ActionAvailability => ({ available: false, reason, by: "spec" });

/** Whether a VMI's domain is paused (its Paused condition is True). */
export function isPaused(vmi: Pick<VirtualMachineInstance, "status"> | undefined): boolean {
  return vmi?.status?.conditions?.some((c) => c.type === VmiConditionType.Paused && c.status === "True") ?? false;
}

/**
 * Whether a domain action, a console or a port forward can be had on a VMI
 * now: the handler's check, which knows the VMI only. `devices` are the
 * VMI's, or for a VM without a VMI its template's.
 */
export function vmiActionAvailability(
  vmi: VmiFacts | undefined,
  action: VmiDomainAction | StreamKind,
  devices = vmi?.spec.domain.devices,
): ActionAvailability {
  if (action === "console" && devices?.autoattachSerialConsole === false)
    return notWithThisSpec("the VMI has no serial console: spec.domain.devices.autoattachSerialConsole is false");
  if (action === "vnc" && devices?.autoattachGraphicsDevice === false)
    return notWithThisSpec("the VMI has no display: spec.domain.devices.autoattachGraphicsDevice is false");
  if (action === "portforward" && vmi && !podNetworkInterface(vmi.spec)) {
    return notWithThisSpec(
      "the VMI has no interface on the pod network to forward to: spec.networks has no pod network " +
        "with an interface in spec.domain.devices.interfaces",
    );
  }
  if (action === "portforward")
    return vmi?.status?.phase === VmiPhase.Running
      ? AVAILABLE
      : notNow(
          `the VMI is not running (phase ${vmi?.status?.phase ?? "none"}); a port can ` +
            "be forwarded to a Running VMI only",
        );
  const console = action === "console" || action === "vnc";
  if (!vmi)
    return notNow(console ? "the VM is not running; start it and try again" : "the VM is not running; start it first");
  const phase = vmi.status?.phase ?? VmiPhase.Pending;
  if (phase !== VmiPhase.Running) {
    const comingUp = phase === VmiPhase.Pending || phase === VmiPhase.Scheduling || phase === VmiPhase.Scheduled;
    const detail = console
      ? comingUp
        ? "wait until it is Running"
        : "start it and try again"
      : `${ACTION_WORDS[action]} needs a running VMI`;
    return notNow(`the VMI is not running (phase ${phase}); ${detail}`);
  }
  const paused = isPaused(vmi);
  if (action === "pause" && paused) return notNow("the VMI is already paused");
  if (action === "unpause" && !paused) return notNow("the VMI is not paused");
  if ((action === "softReboot" || action === "reset") && paused)
    return notNow(`the VMI is paused; unpause it before ${ACTION_WORDS[action]}`);
  return AVAILABLE;
}

/**
 * Start, stop or restart as planVmRequest answers it: available unless refused, and why (400: the spec stands in the
 * way).
 */
function requestAvailability(
  vm: VmFacts,
  vmi: VmiFacts | undefined,
  action: VmRequestAction,
  options: VmRequestOptions = {},
): ActionAvailability {
  const plan = planVmRequest(vm, vmi, action, options);
  if (plan.kind !== "refuse") return AVAILABLE;
  return plan.code === 400 ? notWithThisSpec(plan.message) : notNow(plan.message);
}

/**
 * Why a VM whose instance lives cannot be started again, by where it is on its way: KubeVirt's "VM is already running"
 * in the VM's own terms.
 */
function alreadyOnItsWay(vm: VmFacts): string {
  const status = vm.status?.printableStatus;
  if (status === PrintableStatus.Running) return "the VM is already running";
  if (status === PrintableStatus.Paused) return "the VM is running, paused; Unpause resumes it";
  if (status === PrintableStatus.Migrating) return "the VM is already running; it is moving to another node";
  if (statusTone(status) === "transition") return "the VM is already starting";
  return (
    `the VM is already starting, but ${statusInWords(status).toLowerCase()}; stop ` +
    "it, or remove what stands in its way"
  );
}

/**
 * What can be done to a VM now, given its VMI (undefined when it has none), and why not. KubeVirt's rules, and on
 * top of them the states in between: while the VM stops, only a forced stop (and its consoles) is left.
 */
export function availableActions(vm: VmFacts, vmi: VmiFacts | undefined): Record<VmActionName, ActionAvailability> {
  const deleting = Boolean(vm.metadata.deletionTimestamp);
  const live = vmi !== undefined && !isFinalPhase(vmi.status?.phase);
  const stopping =
    !deleting &&
    live &&
    (Boolean(vmi.metadata.deletionTimestamp) || vm.status?.printableStatus === PrintableStatus.Stopping);
  const lifecycle = (availability: () => ActionAvailability): ActionAvailability => {
    if (deleting) return notNow("the VM is being deleted");
    if (stopping) return notNow("the VM is stopping; Force stop turns it off now");
    return availability();
  };
  const devices = vmi?.spec.domain.devices ?? vm.spec.template.spec.domain.devices;
  const start = (): ActionAvailability => {
    const answer = requestAvailability(vm, vmi, "start");
    return !answer.available && answer.by === "state" && alreadyRunning(vmi) ? notNow(alreadyOnItsWay(vm)) : answer;
  };
  // A forced stop is KubeVirt's stop with a grace period of 0; it takes down whatever VMI there is, even of a VM being
  // deleted.
  const forceStop = requestAvailability(vm, vmi, "stop", { gracePeriod: 0 });
  return {
    start: deleting
      ? notNow("the VM is being deleted")
      : stopping
        ? notNow("the VM is stopping; start it again once it has stopped")
        : start(),
    stop: deleting
      ? notNow("the VM is being deleted")
      : stopping
        ? notNow("the VM is already stopping; Force stop turns it off now")
        : requestAvailability(vm, vmi, "stop"),
    forceStop: deleting && !vmi ? notNow("the VM is being deleted") : forceStop,
    restart: lifecycle(() => requestAvailability(vm, vmi, "restart")),
    pause: lifecycle(() => vmiActionAvailability(vmi, "pause", devices)),
    unpause: lifecycle(() => {
      const answer = vmiActionAvailability(vmi, "unpause", devices);
      return answer.available ? unpauseAvailability(vm) : answer;
    }),
    softReboot: lifecycle(() => vmiActionAvailability(vmi, "softReboot", devices)),
    reset: lifecycle(() => vmiActionAvailability(vmi, "reset", devices)),
    console: vmiActionAvailability(vmi, "console", devices),
    vnc: vmiActionAvailability(vmi, "vnc", devices),
    delete: deleting ? notNow("the VM is already being deleted") : AVAILABLE,
  };
}
