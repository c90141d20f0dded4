import { type ConsoleKind, RunStrategy, VmiConditionType, VmiPhase, type VmiDomainAction } from "./constants.ts";
import { runStrategyOf } from "./defaults.ts";
import type { VirtualMachineInstance } from "./schema/vmi.ts";
import type { VirtualMachine } from "./schema/vm.ts";
import { isFinalPhase } from "./vmi-phase.ts";

// One answer to "can this action run on this VM now, and why not": the API
// refuses with it, the dashboard enables its buttons from it, and the handler
// refuses domain actions and consoles with it. The rules are KubeVirt's
// virt-api subresource handlers' (start refused while a VMI runs, pause and
// soft reboot of a paused VMI, unpause of one that is not paused, consoles and
// domain actions only on a Running VMI), except where this implementation
// does less (a Manual VM is not started on request, a restart only brings
// back a VM whose run strategy recreates it: see planLifecycle).

/** Every action a user may ask of a VM, in the API's and dashboard's names. */
export const VM_ACTIONS = ["start", "stop", "forceStop", "restart", "pause", "unpause", "softReboot", "reset", "console", "vnc", "delete"] as const;
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

type VmFacts = Pick<VirtualMachine, "metadata" | "spec">;
type VmiFacts = Pick<VirtualMachineInstance, "metadata" | "spec" | "status">;

const AVAILABLE: ActionAvailability = { available: true };
const notNow = (reason: string): ActionAvailability => ({ available: false, reason, by: "state" });
const notWithThisSpec = (reason: string): ActionAvailability => ({ available: false, reason, by: "spec" });


/** Whether a VMI's domain is paused (its Paused condition is True). */
export function isPaused(vmi: Pick<VirtualMachineInstance, "status"> | undefined): boolean {
  return vmi?.status?.conditions?.some((c) => c.type === VmiConditionType.Paused && c.status === "True") ?? false;
}

/**
 * Whether a domain action or a console can be had on a VMI now: the handler's
 * check, which knows the VMI only. `devices` are the VMI's, or for a VM
 * without a VMI its template's.
 */
export function vmiActionAvailability(vmi: VmiFacts | undefined, action: VmiDomainAction | ConsoleKind, devices = vmi?.spec.domain.devices): ActionAvailability {
  if (action === "console" && devices?.autoattachSerialConsole === false) return notWithThisSpec("the VMI has no serial console: spec.domain.devices.autoattachSerialConsole is false");
  if (action === "vnc" && devices?.autoattachGraphicsDevice === false) return notWithThisSpec("the VMI has no display: spec.domain.devices.autoattachGraphicsDevice is false");
  const console = action === "console" || action === "vnc";
  if (!vmi) return notNow(console ? "the VM is not running; start it and try again" : "the VM is not running; start it first");
  const phase = vmi.status?.phase ?? VmiPhase.Pending;
  if (phase !== VmiPhase.Running) {
    const comingUp = phase === VmiPhase.Pending || phase === VmiPhase.Scheduling || phase === VmiPhase.Scheduled;
    return notNow(`the VMI is not running (phase ${phase}); ${console ? (comingUp ? "wait until it is Running" : "start it and try again") : `${ACTION_WORDS[action]} needs a running VMI`}`);
  }
  const paused = isPaused(vmi);
  if (action === "pause" && paused) return notNow("the VMI is already paused");
  if (action === "unpause" && !paused) return notNow("the VMI is not paused");
  if ((action === "softReboot" || action === "reset") && paused) return notNow(`the VMI is paused; unpause it before ${ACTION_WORDS[action]}`);
  return AVAILABLE;
}

function stopAvailability(strategy: RunStrategy, vmi: VmiFacts | undefined): ActionAvailability {
  const stopped = !vmi || isFinalPhase(vmi.status?.phase);
  switch (strategy) {
    case RunStrategy.Halted:
      return notNow(stopped ? "the VM is already stopped" : "the VM is already stopping");
    case RunStrategy.Manual:
      if (stopped) return notNow("the VM is already stopped");
      return vmi.metadata.deletionTimestamp ? notNow("the VM is already stopping") : AVAILABLE;
    default:
      // Halting an Always, RerunOnFailure or Once VM stops it wherever it is, even before it has a VMI.
      return AVAILABLE;
  }
}

function startAvailability(strategy: RunStrategy, vmi: VmiFacts | undefined): ActionAvailability {
  const phase = vmi?.status?.phase;
  // As KubeVirt: a VMI that has not finished and whose phase is known is running, or on its way up or down.
  if (vmi && !isFinalPhase(phase) && phase !== VmiPhase.Unknown) {
    if (vmi.metadata.deletionTimestamp || strategy === RunStrategy.Halted) return notNow("the VM is stopping; start it again once it has stopped");
    return notNow(phase === VmiPhase.Running ? "the VM is already running" : "the VM is already starting");
  }
  if (strategy === RunStrategy.Halted) return AVAILABLE;
  if (strategy === RunStrategy.Always) return notNow("the VM is already starting: runStrategy Always starts it by itself");
  return notWithThisSpec(`runStrategy ${strategy} does not start on request here; set spec.runStrategy to Always to start it`);
}

function restartAvailability(strategy: RunStrategy, vmi: VmiFacts | undefined): ActionAvailability {
  if (!vmi) return notNow("the VM is not running; start it instead");
  if (strategy !== RunStrategy.Always && strategy !== RunStrategy.RerunOnFailure) {
    return notWithThisSpec(`runStrategy ${strategy} would not bring the VM back after a restart; stop and start it, or set spec.runStrategy to Always`);
  }
  if (vmi.metadata.deletionTimestamp) return notNow("the VM is already restarting or stopping");
  return AVAILABLE;
}

/** What can be done to a VM now, given its VMI (undefined when it has none), and why not. */
export function availableActions(vm: VmFacts, vmi: VmiFacts | undefined): Record<VmActionName, ActionAvailability> {
  const strategy = runStrategyOf(vm.spec);
  const deleting = Boolean(vm.metadata.deletionTimestamp);
  const lifecycle = (availability: () => ActionAvailability): ActionAvailability => (deleting ? notNow("the VM is being deleted") : availability());
  const devices = vmi?.spec.domain.devices ?? vm.spec.template.spec.domain.devices;
  const stop = lifecycle(() => stopAvailability(strategy, vmi));
  return {
    start: lifecycle(() => startAvailability(strategy, vmi)),
    stop,
    // Force stop takes down whatever VMI there is, even of a VM being deleted.
    forceStop: vmi ? AVAILABLE : stop,
    restart: lifecycle(() => restartAvailability(strategy, vmi)),
    pause: vmiActionAvailability(vmi, "pause", devices),
    unpause: vmiActionAvailability(vmi, "unpause", devices),
    softReboot: vmiActionAvailability(vmi, "softReboot", devices),
    reset: vmiActionAvailability(vmi, "reset", devices),
    console: vmiActionAvailability(vmi, "console", devices),
    vnc: vmiActionAvailability(vmi, "vnc", devices),
    delete: deleting ? notNow("the VM is already being deleted") : AVAILABLE,
  };
}
