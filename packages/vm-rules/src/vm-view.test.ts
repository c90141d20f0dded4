import { describe, expect, it } from "vitest";
import { PRINTABLE_STATUSES } from "@kubevirt-ts/kubevirt-api";
import { conditionsInWords, matchesStatusFilter, statusInWords, statusReason, statusTone } from "./vm-view.ts";

type Vm = Parameters<typeof statusReason>[0];
type Vmi = NonNullable<Parameters<typeof statusReason>[1]>;
const vm = (printableStatus: string, extra: Record<string, unknown> = {}): Vm =>
  ({ metadata: { name: "web" }, status: { printableStatus, ...extra } }) as Vm;
const vmi = (
  phase: string,
  conditions: { type: string; status: string; reason?: string; message?: string }[] = [],
  deleting = false,
): Vmi =>
  ({
    metadata: { name: "web", ...(deleting && { deletionTimestamp: "2026-01-01T00:00:00Z" }) },
    spec: { domain: { devices: {} }, terminationGracePeriodSeconds: 30 },
    status: { phase, conditions },
  }) as Vmi;

describe("statusTone", () => {
  it("gives every printable status a tone, and only the healthy ones are not a problem", () => {
    const tones = Object.fromEntries(PRINTABLE_STATUSES.map((s) => [s, statusTone(s)]));
    expect(tones).toMatchObject({
      Running: "running",
      Paused: "paused",
      Stopped: "stopped",
      Starting: "transition",
      Stopping: "transition",
      Terminating: "transition",
      Provisioning: "transition",
    });
    for (const problem of [
      "ErrorUnschedulable",
      "ErrImagePull",
      "ImagePullBackOff",
      "ErrorPvcNotFound",
      "CrashLoopBackOff",
      "DataVolumeError",
      "Unknown",
    ])
      expect(tones[problem]).toBe("problem");
    // A VM the controller has not looked at yet reads as stopped.
    expect(statusTone(undefined)).toBe("stopped");
  });

  it("filters the problems together", () => {
    expect(matchesStatusFilter("ErrorUnschedulable", "Problem")).toBe(true);
    expect(matchesStatusFilter("Starting", "Problem")).toBe(false);
    expect(matchesStatusFilter(undefined, "Stopped")).toBe(true);
  });
});

describe("statusReason", () => {
  it("says why a VM cannot be placed, in the scheduler's words", () => {
    const reason = statusReason(
      vm("ErrorUnschedulable"),
      vmi("Scheduling", [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/1 nodes are available: 1 Insufficient memory.",
        },
      ]),
    );
    expect(statusInWords("ErrorUnschedulable")).toBe("Cannot be placed on a node");
    expect(reason).toBe("0/1 nodes are available: 1 Insufficient memory.");
  });

  it("says where a starting VM is, and how long a stopping one has", () => {
    expect(statusReason(vm("Starting"), vmi("Scheduling"))).toBe("Waiting for a node to take it.");
    expect(statusReason(vm("Stopping"), vmi("Running", [], true))).toContain("30 s");
  });

  it("says nothing more of a running or stopped VM", () => {
    expect(statusReason(vm("Running"), vmi("Running"))).toBeUndefined();
    expect(statusReason(vm("Stopped"), undefined)).toBeUndefined();
  });
});

describe("conditionsInWords", () => {
  it("never reads a ready VM as not ready, nor a stopped one as running", () => {
    expect(conditionsInWords([{ type: "Ready", status: "True", message: "The VMI is not ready yet." }])).toEqual([
      { type: "Ready", label: "Ready", tone: "good", message: undefined },
    ]);
    expect(
      conditionsInWords([
        { type: "Ready", status: "False", reason: "VMINotExists", message: "The VM has no VMI: it is not running." },
      ])[0],
    ).toMatchObject({ label: "Not running", tone: "neutral" });
  });

  it("leaves out what says nothing, and keeps unknown conditions by their type", () => {
    expect(
      conditionsInWords([
        { type: "Paused", status: "False" },
        { type: "Failure", status: "False" },
      ]),
    ).toEqual([]);
    expect(conditionsInWords([{ type: "Custom", status: "Unknown", message: "m" }])).toEqual([
      { type: "Custom", label: "Custom: Unknown", tone: "neutral", message: "m" },
    ]);
    expect(conditionsInWords([{ type: "PodScheduled", status: "False", message: "no node" }])[0]).toMatchObject({
      label: "Not placed on a node",
      tone: "bad",
      message: "no node",
    });
  });
});
