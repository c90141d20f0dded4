import { describe, expect, it } from "vitest";
import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { planVmRequest } from "./vm-requests.ts";

const vm = (spec: Partial<VirtualMachine["spec"]>, status?: VirtualMachine["status"]) => ({
  spec: { template: { spec: {} }, ...spec } as VirtualMachine["spec"],
  ...(status ? { status } : {}),
});
const vmi = (
  phase: string,
  extra: Partial<NonNullable<VirtualMachineInstance["status"]>> = {},
  spec: Record<string, unknown> = {},
) =>
  ({
    metadata: { uid: "vmi-1" },
    spec: { domain: { devices: {} }, ...spec },
    status: { phase, ...extra },
  }) as unknown as VirtualMachineInstance;

describe("start, stop and restart of a VM, as KubeVirt's virt-api does them", () => {
  it("starts a Halted VM by its run strategy, tested against what was read", () => {
    expect(planVmRequest(vm({ runStrategy: "Halted" }), undefined, "start")).toEqual({
      kind: "patch",
      spec: [
        { op: "test", path: "/spec/runStrategy", value: "Halted" },
        { op: "replace", path: "/spec/runStrategy", value: "Always" },
      ],
    });
    expect(planVmRequest(vm({ running: false }), undefined, "start")).toEqual({
      kind: "patch",
      spec: [
        { op: "test", path: "/spec/running", value: false },
        { op: "replace", path: "/spec/running", value: true },
      ],
    });
  });

  it("starts a Manual VM with a state change request, and a paused start carries its data", () => {
    expect(planVmRequest(vm({ runStrategy: "Manual" }), undefined, "start")).toEqual({
      kind: "patch",
      status: [{ op: "add", path: "/status", value: { stateChangeRequests: [{ action: "Start" }] } }],
    });
    expect(
      planVmRequest(vm({ runStrategy: "Manual" }, { printableStatus: "Stopped" }), vmi("Succeeded"), "start", {
        paused: true,
      }),
    ).toEqual({
      kind: "patch",
      status: [
        { op: "test", path: "/status/stateChangeRequests", value: null },
        {
          op: "add",
          path: "/status/stateChangeRequests",
          value: [
            { action: "Stop", uid: "vmi-1" },
            { action: "Start", data: { paused: "true" } },
          ],
        },
      ],
    });
  });

  it(
    "starts a Halted VM paused with the request in its status first, then its run " +
      "strategy Always; never with a liveness probe",
    () => {
      expect(planVmRequest(vm({ runStrategy: "Halted" }), undefined, "start", { paused: true })).toEqual({
        kind: "patch",
        status: [
          {
            op: "add",
            path: "/status",
            value: { stateChangeRequests: [{ action: "Start", data: { paused: "true" } }] },
          },
        ],
        spec: [
          { op: "test", path: "/spec/runStrategy", value: "Halted" },
          { op: "replace", path: "/spec/runStrategy", value: "Always" },
        ],
      });
      const probed = vm({ runStrategy: "Manual" });
      probed.spec.template.spec.livenessProbe = { guestAgentPing: {} };
      expect(planVmRequest(probed, undefined, "start", { paused: true })).toEqual({
        kind: "refuse",
        code: 409,
        message: "VM has a livenessProbe, which a paused guest cannot pass: start it without --paused",
      });
    },
  );

  it("refuses as KubeVirt does, in its words", () => {
    expect(planVmRequest(vm({ runStrategy: "Always" }), vmi("Running"), "start")).toEqual({
      kind: "refuse",
      code: 409,
      message: "VM is already running",
    });
    expect(planVmRequest(vm({ runStrategy: "Always" }), undefined, "start")).toEqual({
      kind: "refuse",
      code: 409,
      message: "Always does not support manual start requests",
    });
    expect(planVmRequest(vm({ runStrategy: "RerunOnFailure" }), vmi("Failed"), "start")).toEqual({
      kind: "refuse",
      code: 409,
      message: "RerunOnFailure does not support starting VM from failed state",
    });
    expect(planVmRequest(vm({ runStrategy: "Manual" }), undefined, "stop")).toEqual({
      kind: "refuse",
      code: 409,
      message: "VM is not running",
    });
    expect(planVmRequest(vm({ runStrategy: "Halted" }), undefined, "restart")).toEqual({
      kind: "refuse",
      code: 409,
      message: "RunStategy Halted does not support manual restart requests",
    });
    expect(planVmRequest(vm({ runStrategy: "Always" }), undefined, "restart")).toEqual({
      kind: "refuse",
      code: 409,
      message: "VM is not running: Halted",
    });
    expect(planVmRequest(vm({ runStrategy: "Always" }), vmi("Running"), "restart", { gracePeriodSeconds: 5 })).toEqual({
      kind: "refuse",
      code: 400,
      message: "For force restart, only gracePeriod=0 is supported for now",
    });
    expect(
      planVmRequest(vm({ runStrategy: "Manual" }, { stateChangeRequests: [{ action: "Start" }] }), undefined, "start")
        .kind,
    ).toBe("refuse");
  });

  it(
    "stops an Always VM by its spec, with the grace period set on the VMI first; a " +
      "Manual one by a request naming its VMI",
    () => {
      expect(planVmRequest(vm({ runStrategy: "Always" }), vmi("Running"), "stop", { gracePeriod: 0 })).toEqual({
        kind: "patch",
        spec: [
          { op: "test", path: "/spec/runStrategy", value: "Always" },
          { op: "replace", path: "/spec/runStrategy", value: "Halted" },
        ],
        vmiGrace: [
          { op: "test", path: "/spec/terminationGracePeriodSeconds", value: null },
          { op: "add", path: "/spec/terminationGracePeriodSeconds", value: 0 },
        ],
      });
      expect(
        planVmRequest(vm({ runStrategy: "Manual" }, { printableStatus: "Running" }), vmi("Running"), "stop"),
      ).toEqual({
        kind: "patch",
        status: [
          { op: "test", path: "/status/stateChangeRequests", value: null },
          { op: "add", path: "/status/stateChangeRequests", value: [{ action: "Stop", uid: "vmi-1" }] },
        ],
      });
    },
  );

  it("restarts with a stop of the current VMI and a start, whatever the strategy allows", () => {
    expect(
      planVmRequest(vm({ runStrategy: "Always" }, { printableStatus: "Running" }), vmi("Running"), "restart"),
    ).toEqual({
      kind: "patch",
      status: [
        { op: "test", path: "/status/stateChangeRequests", value: null },
        {
          op: "add",
          path: "/status/stateChangeRequests",
          value: [{ action: "Stop", uid: "vmi-1" }, { action: "Start" }],
        },
      ],
    });
  });
});
