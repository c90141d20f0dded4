import { describe, expect, it } from "vitest";
import { type LifecycleAction, planLifecycle } from "./lifecycle.ts";

const vm = (spec: { runStrategy?: string; running?: boolean }) => ({ spec: { ...spec, template: { spec: { domain: { devices: {} } } } } }) as Parameters<typeof planLifecycle>[0];

describe("planLifecycle", () => {
  it.each<[string, { runStrategy?: string; running?: boolean }, boolean, LifecycleAction, unknown]>([
    ["starts a halted VM by making it Always run", { runStrategy: "Halted" }, false, "start", { kind: "patch", patch: { spec: { runStrategy: "Always" } } }],
    ["starts a VM of the legacy running field through that field", { running: false }, false, "start", { kind: "patch", patch: { spec: { running: true } } }],
    ["refuses to start a running VM", { runStrategy: "Always" }, true, "start", { kind: "refuse", reason: "the VM is already running" }],
    ["refuses to start a Manual VM, saying what to do", { runStrategy: "Manual" }, false, "start", { kind: "refuse", reason: "runStrategy Manual does not start on request here; set spec.runStrategy to Always to start it" }],
    ["stops an Always VM by halting it", { runStrategy: "Always" }, true, "stop", { kind: "patch", patch: { spec: { runStrategy: "Halted" } } }],
    ["stops a RerunOnFailure VM by halting it", { runStrategy: "RerunOnFailure" }, true, "stop", { kind: "patch", patch: { spec: { runStrategy: "Halted" } } }],
    ["stops a legacy running VM through its field", { running: true }, true, "stop", { kind: "patch", patch: { spec: { running: false } } }],
    ["stops a Manual VM by deleting its VMI", { runStrategy: "Manual" }, true, "stop", { kind: "deleteVmi" }],
    ["refuses to stop a stopped VM", { runStrategy: "Halted" }, false, "stop", { kind: "refuse", reason: "the VM is already stopped" }],
    ["refuses to stop a VM that is stopping", { runStrategy: "Halted" }, true, "stop", { kind: "refuse", reason: "the VM is already stopping" }],
    ["restarts an Always VM by deleting its VMI, which the controller recreates", { runStrategy: "Always" }, true, "restart", { kind: "deleteVmi" }],
    ["refuses to restart a stopped VM", { runStrategy: "Always" }, false, "restart", { kind: "refuse", reason: "the VM is not running; start it instead" }],
    ["refuses to restart a Once VM, which would not come back", { runStrategy: "Once" }, true, "restart", { kind: "refuse", reason: "runStrategy Once would not bring the VM back after a restart; stop and start it, or set spec.runStrategy to Always" }],
  ])("%s", (_, spec, vmiExists, action, plan) => {
    expect(planLifecycle(vm(spec), vmiExists, action)).toEqual(plan);
  });
});
