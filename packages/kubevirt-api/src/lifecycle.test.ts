import { describe, expect, it } from "vitest";
import { type LifecycleAction, planLifecycle } from "./lifecycle.ts";

type Vm = Parameters<typeof planLifecycle>[0];
type Vmi = NonNullable<Parameters<typeof planLifecycle>[1]>;
const vm = (spec: { runStrategy?: string; running?: boolean }) => ({ metadata: { name: "web" }, spec: { ...spec, template: { spec: { domain: { devices: {} } } } } }) as Vm;
const vmi = (phase: string, deleting = false): Vmi => ({ metadata: { name: "web", ...(deleting && { deletionTimestamp: "2026-01-01T00:00:00Z" }) }, spec: { domain: { devices: {} } }, status: { phase } }) as Vmi;
const running = vmi("Running");

describe("planLifecycle", () => {
  it.each<[string, { runStrategy?: string; running?: boolean }, Vmi | undefined, LifecycleAction, unknown]>([
    ["starts a halted VM by making it Always run", { runStrategy: "Halted" }, undefined, "start", { kind: "do", patch: { spec: { runStrategy: "Always" } } }],
    ["starts a VM of the legacy running field through that field", { running: false }, undefined, "start", { kind: "do", patch: { spec: { running: true } } }],
    ["starts a halted VM whose VMI's node was lost (phase Unknown), as KubeVirt does", { runStrategy: "Halted" }, vmi("Unknown"), "start", { kind: "do", patch: { spec: { runStrategy: "Always" } } }],
    ["refuses to start a running VM", { runStrategy: "Always" }, running, "start", { kind: "refuse", by: "state", reason: "the VM is already running" }],
    ["refuses to start a Manual VM, saying what to do", { runStrategy: "Manual" }, undefined, "start", { kind: "refuse", by: "spec", reason: "runStrategy Manual does not start on request here; set spec.runStrategy to Always to start it" }],
    ["stops an Always VM by halting it", { runStrategy: "Always" }, running, "stop", { kind: "do", patch: { spec: { runStrategy: "Halted" } } }],
    ["stops an Always VM that has no VMI yet by halting it", { runStrategy: "Always" }, undefined, "stop", { kind: "do", patch: { spec: { runStrategy: "Halted" } } }],
    ["stops a RerunOnFailure VM by halting it", { runStrategy: "RerunOnFailure" }, running, "stop", { kind: "do", patch: { spec: { runStrategy: "Halted" } } }],
    ["stops a legacy running VM through its field", { running: true }, running, "stop", { kind: "do", patch: { spec: { running: false } } }],
    ["stops a Manual VM by deleting its VMI", { runStrategy: "Manual" }, running, "stop", { kind: "do", deleteVmi: "graceful" }],
    ["refuses to stop a Manual VM whose VMI has finished", { runStrategy: "Manual" }, vmi("Succeeded"), "stop", { kind: "refuse", by: "state", reason: "the VM is already stopped" }],
    ["refuses to stop a stopped VM", { runStrategy: "Halted" }, undefined, "stop", { kind: "refuse", by: "state", reason: "the VM is already stopped" }],
    ["refuses to stop a VM that is stopping", { runStrategy: "Halted" }, running, "stop", { kind: "refuse", by: "state", reason: "the VM is already stopping" }],
    ["force stops a stopping VM by deleting its VMI at once", { runStrategy: "Halted" }, vmi("Running", true), "forceStop", { kind: "do", deleteVmi: "force" }],
    ["force stops an Always VM by halting it and deleting its VMI at once", { runStrategy: "Always" }, running, "forceStop", { kind: "do", patch: { spec: { runStrategy: "Halted" } }, deleteVmi: "force" }],
    ["force stops a Manual VM by deleting its VMI at once", { runStrategy: "Manual" }, running, "forceStop", { kind: "do", deleteVmi: "force" }],
    ["refuses to force stop a stopped VM", { runStrategy: "Halted" }, undefined, "forceStop", { kind: "refuse", by: "state", reason: "the VM is already stopped" }],
    ["restarts an Always VM by deleting its VMI, which the controller recreates", { runStrategy: "Always" }, running, "restart", { kind: "do", deleteVmi: "graceful" }],
    ["refuses to restart a stopped VM", { runStrategy: "Always" }, undefined, "restart", { kind: "refuse", by: "state", reason: "the VM is not running; start it instead" }],
    ["refuses to restart a Once VM, which would not come back", { runStrategy: "Once" }, running, "restart", { kind: "refuse", by: "spec", reason: "runStrategy Once would not bring the VM back after a restart; stop and start it, or set spec.runStrategy to Always" }],
  ])("%s", (_, spec, instance, action, plan) => {
    expect(planLifecycle(vm(spec), instance, action)).toEqual(plan);
  });

  it("refuses every lifecycle action of a VM being deleted but force stop", () => {
    const deleting = { ...vm({ runStrategy: "Always" }), metadata: { name: "web", deletionTimestamp: "2026-01-01T00:00:00Z" } };
    for (const action of ["start", "stop", "restart"] as const) expect(planLifecycle(deleting, running, action)).toEqual({ kind: "refuse", by: "state", reason: "the VM is being deleted" });
    expect(planLifecycle(deleting, running, "forceStop")).toEqual({ kind: "do", patch: { spec: { runStrategy: "Halted" } }, deleteVmi: "force" });
  });
});
