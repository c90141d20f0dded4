import { type RefusedBy, availableActions } from "./actions.ts";
import { RunStrategy } from "./constants.ts";
import { runStrategyOf } from "./defaults.ts";
import type { VirtualMachineInstance } from "./schema/vmi.ts";
import type { VirtualMachine } from "./schema/vm.ts";

// What start, stop, force stop and restart of a VM change, as KubeVirt's
// virtctl does for each run strategy, planned as changes the user may make
// with their own permissions: a merge patch of the VM's spec, and the
// deletion of its VMI. (KubeVirt records some of them in the VM's status as
// stateChangeRequests instead, written by virt-api's own account; here
// nothing is written for a user that the user could not write, which is why
// a Manual VM is not started on request.) Whether the action may run at all
// is availableActions' answer.

export type LifecycleAction = "start" | "stop" | "forceStop" | "restart";

export type LifecyclePlan =
  | { kind: "do"; patch?: { spec: { runStrategy?: string; running?: boolean } }; deleteVmi?: "graceful" | "force" }
  | { kind: "refuse"; reason: string; by: RefusedBy };

export function planLifecycle(vm: Pick<VirtualMachine, "metadata" | "spec">, vmi: Pick<VirtualMachineInstance, "metadata" | "spec" | "status"> | undefined, action: LifecycleAction): LifecyclePlan {
  const availability = availableActions(vm, vmi)[action];
  if (!availability.available) return { kind: "refuse", reason: availability.reason, by: availability.by };
  const strategy = runStrategyOf(vm.spec);
  const legacy = vm.spec.running !== undefined;
  const setRunning = (running: boolean, runStrategy: string) => ({ spec: legacy ? { running } : { runStrategy } });
  // Halting is how an Always, RerunOnFailure or Once VM stops; a Manual VM stops by losing its VMI.
  const halt = strategy === RunStrategy.Halted || strategy === RunStrategy.Manual ? undefined : setRunning(false, RunStrategy.Halted);
  switch (action) {
    case "start":
      return { kind: "do", patch: setRunning(true, RunStrategy.Always) };
    case "stop":
      return halt ? { kind: "do", patch: halt } : { kind: "do", deleteVmi: "graceful" };
    case "forceStop":
      return { kind: "do", ...(halt && { patch: halt }), ...(vmi && { deleteVmi: "force" as const }) };
    case "restart":
      return { kind: "do", deleteVmi: "graceful" };
  }
}
