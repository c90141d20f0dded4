import { RunStrategy } from "./constants.ts";
import { runStrategyOf } from "./defaults.ts";
import type { VirtualMachine } from "./schema/vm.ts";

// What start, stop and restart of a VM change, as KubeVirt's virtctl does
// for each run strategy, planned as changes the user may make with their own
// permissions: a merge patch of the VM's spec, or the deletion of its VMI.
// (KubeVirt records some of them in the VM's status instead, written by
// virt-api's own account; here nothing is written for a user that the user
// could not write.)

export type LifecycleAction = "start" | "stop" | "restart";

export type LifecyclePlan =
  | { kind: "patch"; patch: { spec: { runStrategy?: string; running?: boolean } } }
  | { kind: "deleteVmi" }
  | { kind: "refuse"; reason: string };

export function planLifecycle(vm: Pick<VirtualMachine, "spec">, vmiExists: boolean, action: LifecycleAction): LifecyclePlan {
  const strategy = runStrategyOf(vm.spec);
  const legacy = vm.spec.running !== undefined;
  const setRunning = (running: boolean, runStrategy: string): LifecyclePlan => ({ kind: "patch", patch: { spec: legacy ? { running } : { runStrategy } } });
  switch (action) {
    case "start":
      if (strategy === RunStrategy.Halted) return setRunning(true, RunStrategy.Always);
      if (vmiExists) return { kind: "refuse", reason: "the VM is already running" };
      return { kind: "refuse", reason: `runStrategy ${strategy} does not start on request here; set spec.runStrategy to Always to start it` };
    case "stop":
      if (strategy === RunStrategy.Halted) return { kind: "refuse", reason: vmiExists ? "the VM is already stopping" : "the VM is already stopped" };
      if (strategy === RunStrategy.Manual) return vmiExists ? { kind: "deleteVmi" } : { kind: "refuse", reason: "the VM is already stopped" };
      return setRunning(false, RunStrategy.Halted);
    case "restart":
      if (!vmiExists) return { kind: "refuse", reason: "the VM is not running; start it instead" };
      if (strategy === RunStrategy.Always || strategy === RunStrategy.RerunOnFailure) return { kind: "deleteVmi" };
      return { kind: "refuse", reason: `runStrategy ${strategy} would not bring the VM back after a restart; stop and start it, or set spec.runStrategy to Always` };
  }
}
