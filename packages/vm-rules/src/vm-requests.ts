import {
  RunStrategy,
  VmiPhase,
  runStrategyOf,
  type StateChangeRequest,
  type VirtualMachine,
  type VirtualMachineInstance,
} from "@kubevirt-ts/kubevirt-api";
import { isFinalPhase } from "./vmi-phase.ts";

// KubeVirt's start, stop and restart of a VM, as its virt-api's subresources
// (PUT .../virtualmachines/<name>/start|stop|restart) carry them out for each
// run strategy: a JSON patch of the VM's spec (test, then replace), or state
// change requests in its status, which the VM controller carries out
// (services/controller/src/vm/decide.ts), or a refusal with KubeVirt's code
// and words. Pure: the API does the writes, with its own account, after the
// user was authorized for that subresource (docs/adr/0006).

export type VmRequestAction = "start" | "stop" | "restart";

export interface VmRequestOptions {
  /** start: the VMI starts paused. */
  paused?: boolean;
  /** stop: the grace period the VMI is stopped with. */
  gracePeriod?: number;
  /** restart: 0 forces it (the only value KubeVirt takes). */
  gracePeriodSeconds?: number;
}

export type JsonPatchOp =
  { op: "test" | "add" | "replace"; path: string; value: unknown } | { op: "remove"; path: string };

export type VmRequestPlan =
  | { kind: "refuse"; code: 400 | 409; message: string }
  | {
      kind: "patch";
      /** A JSON patch of the VM's spec (the run strategy or the legacy running field). */
      spec?: JsonPatchOp[];
      /** A JSON patch of the VM's status: its state change requests. */
      status?: JsonPatchOp[];
      /** A JSON patch of the VMI's spec: the grace period it is stopped with, applied first. */
      vmiGrace?: JsonPatchOp[];
    };

type Vm = Pick<VirtualMachine, "spec" | "status">;
type Vmi = Pick<VirtualMachineInstance, "metadata" | "spec" | "status">;

const refuse = (code: 400 | 409, message: string): VmRequestPlan => ({ kind: "refuse", code, message });

/** Sets the run strategy (or the legacy running field), provided it is still what was read. */
function specToggle(vm: Vm, run: boolean): JsonPatchOp[] {
  if (vm.spec.runStrategy === undefined && vm.spec.running !== undefined) {
    return [
      { op: "test", path: "/spec/running", value: vm.spec.running },
      { op: "replace", path: "/spec/running", value: run },
    ];
  }
  const value = run ? RunStrategy.Always : RunStrategy.Halted;
  return vm.spec.runStrategy === undefined
    ? [{ op: "add", path: "/spec/runStrategy", value }]
    : [
        { op: "test", path: "/spec/runStrategy", value: vm.spec.runStrategy },
        { op: "replace", path: "/spec/runStrategy", value },
      ];
}

/**
 * Adds requests to the VM's status, provided the pending ones are still what was read. A stop replaces pending
 * requests; anything else while requests are pending is refused, as KubeVirt does.
 */
function addRequests(vm: Vm, requests: StateChangeRequest[]): JsonPatchOp[] | VmRequestPlan {
  const pending = vm.status?.stateChangeRequests ?? [];
  const ops: JsonPatchOp[] = [];
  if (!vm.status || Object.keys(vm.status).length === 0) {
    ops.push({ op: "add", path: "/status", value: { stateChangeRequests: requests } });
  } else if (pending.length === 0) {
    ops.push(
      { op: "test", path: "/status/stateChangeRequests", value: vm.status.stateChangeRequests ?? null },
      { op: "add", path: "/status/stateChangeRequests", value: requests },
    );
  } else if (requests.length === 1 && requests[0]?.action === "Stop") {
    ops.push(
      { op: "test", path: "/status/stateChangeRequests", value: pending },
      { op: "replace", path: "/status/stateChangeRequests", value: requests },
    );
  } else {
    return refuse(409, "unable to complete request: stop/start already underway");
  }
  if (vm.status?.startFailure) ops.push({ op: "remove", path: "/status/startFailure" });
  return ops;
}

const withStatus = (
  ops: JsonPatchOp[] | VmRequestPlan,
  extra: Partial<Extract<VmRequestPlan, { kind: "patch" }>> = {},
): VmRequestPlan => (Array.isArray(ops) ? { kind: "patch", status: ops, ...extra } : ops);

function graceOps(vmi: Vmi, seconds: number): JsonPatchOp[] {
  const current = vmi.spec.terminationGracePeriodSeconds;
  return [
    { op: "test", path: "/spec/terminationGracePeriodSeconds", value: current ?? null },
    { op: current === undefined ? "add" : "replace", path: "/spec/terminationGracePeriodSeconds", value: seconds },
  ];
}

const live = (vmi: Vmi | undefined): vmi is Vmi => vmi !== undefined && !isFinalPhase(vmi.status?.phase);

/** KubeVirt's "VM is already running": a VMI not finished, with a phase other than Unknown. */
export function alreadyRunning(vmi: Pick<VirtualMachineInstance, "status"> | undefined): boolean {
  const phase = vmi?.status?.phase;
  return vmi !== undefined && !isFinalPhase(phase) && phase !== undefined && phase !== VmiPhase.Unknown;
}

function start(vm: Vm, vmi: Vmi | undefined, options: VmRequestOptions): VmRequestPlan {
  const phase = vmi?.status?.phase;
  if (alreadyRunning(vmi)) return refuse(409, "VM is already running");
  // KubeVirt's rule: a guest that starts paused would fail its liveness probe until someone unpaused it.
  if (options.paused && vm.spec.template.spec.livenessProbe)
    return refuse(409, "VM has a livenessProbe, which a paused guest cannot pass: start it without --paused");
  const startRequest: StateChangeRequest = options.paused
    ? { action: "Start", data: { paused: "true" } }
    : { action: "Start" };
  const restartOfFinished = (): StateChangeRequest[] =>
    vmi && isFinalPhase(phase) ? [{ action: "Stop", uid: vmi.metadata.uid }, startRequest] : [startRequest];
  const strategy = runStrategyOf(vm.spec);
  switch (strategy) {
    case RunStrategy.Halted:
      // Paused: the request goes into the status first (the API writes status before spec), then the run strategy turns
      // Always.
      return options.paused
        ? withStatus(addRequests(vm, [startRequest]), { spec: specToggle(vm, true) })
        : { kind: "patch", spec: specToggle(vm, true) };
    case RunStrategy.Manual:
      return withStatus(addRequests(vm, restartOfFinished()));
    case RunStrategy.RerunOnFailure:
      if (phase === VmiPhase.Failed)
        return refuse(409, "RerunOnFailure does not support starting VM from failed state");
      return withStatus(addRequests(vm, restartOfFinished()));
    default:
      return refuse(409, `${strategy} does not support manual start requests`);
  }
}

function stop(vm: Vm, vmi: Vmi | undefined, options: VmRequestOptions): VmRequestPlan {
  const strategy = runStrategyOf(vm.spec);
  // The grace period is set on a running VMI first, as KubeVirt does, so that the stop uses it.
  const vmiGrace = live(vmi) && options.gracePeriod !== undefined ? graceOps(vmi, options.gracePeriod) : undefined;
  const extra = vmiGrace ? { vmiGrace } : {};
  switch (strategy) {
    case RunStrategy.Halted: {
      if (!live(vmi)) return refuse(409, "VM is not running");
      const old = vmi.spec.terminationGracePeriodSeconds;
      if (options.gracePeriod === undefined || (old !== undefined && options.gracePeriod >= old))
        return refuse(409, "Halted only supports manual stop requests with a shorter graceperiod");
      return withStatus(addRequests(vm, [{ action: "Stop", uid: vmi.metadata.uid }]), extra);
    }
    case RunStrategy.Manual:
    case RunStrategy.RerunOnFailure:
      if (!live(vmi)) return refuse(409, "VM is not running");
      return withStatus(addRequests(vm, [{ action: "Stop", uid: vmi.metadata.uid }]), extra);
    default:
      return { kind: "patch", spec: specToggle(vm, false), ...extra };
  }
}

function restart(vm: Vm, vmi: Vmi | undefined, options: VmRequestOptions): VmRequestPlan {
  if (options.gracePeriodSeconds !== undefined && options.gracePeriodSeconds > 0)
    return refuse(400, "For force restart, only gracePeriod=0 is supported for now");
  if (options.gracePeriodSeconds !== undefined && options.gracePeriodSeconds < 0)
    return refuse(400, "gracePeriod has to be greater or equal to 0");
  const strategy = runStrategyOf(vm.spec);
  if (strategy === RunStrategy.Halted || strategy === RunStrategy.Once)
    return refuse(409, `RunStategy ${strategy} does not support manual restart requests`);
  if (!vmi) return refuse(409, "VM is not running: Halted");
  // Forced: the VMI goes with a grace period of one second.
  const extra = options.gracePeriodSeconds === 0 ? { vmiGrace: graceOps(vmi, 1) } : {};
  return withStatus(addRequests(vm, [{ action: "Stop", uid: vmi.metadata.uid }, { action: "Start" }]), extra);
}

/** KubeVirt's answer to start, stop or restart of a VM, for the VM and its VMI as they are now. */
export function planVmRequest(
  vm: Vm,
  vmi: Vmi | undefined,
  action: VmRequestAction,
  options: VmRequestOptions = {},
): VmRequestPlan {
  if (vm.spec.running !== undefined && vm.spec.runStrategy !== undefined)
    return refuse(400, "running and runstrategy are mutually exclusive");
  switch (action) {
    case "start":
      return start(vm, vmi, options);
    case "stop":
      return stop(vm, vmi, options);
    case "restart":
      return restart(vm, vmi, options);
  }
}
