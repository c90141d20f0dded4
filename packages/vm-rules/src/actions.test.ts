import { describe, expect, it } from "vitest";
import { VM_ACTIONS, type VmActionName, availableActions, vmiActionAvailability } from "./actions.ts";
import {
  parseIpv4Network,
  podNetworkInterface,
  PRINTABLE_STATUSES,
  type PrintableStatus,
} from "@kubevirt-ts/kubevirt-api";

type Vm = Parameters<typeof availableActions>[0];
type Vmi = NonNullable<Parameters<typeof availableActions>[1]>;
const at = "2026-01-01T00:00:00Z";
const vm = (runStrategy: string, { deleting = false, serial = true } = {}): Vm =>
  ({
    metadata: { name: "web", ...(deleting && { deletionTimestamp: at }) },
    spec: {
      runStrategy,
      template: { spec: { domain: { devices: serial ? {} : { autoattachSerialConsole: false } } } },
    },
  }) as Vm;
const vmi = (
  phase: string,
  { deleting = false, conditions = [] as { type: string; status: string; reason?: string }[] } = {},
): Vmi =>
  ({
    metadata: { name: "web", ...(deleting && { deletionTimestamp: at }) },
    spec: { domain: { devices: {} } },
    status: { phase, nodeName: "node-1", conditions },
  }) as Vmi;
const paused = { conditions: [{ type: "Paused", status: "True" }] };

const ALL_DOMAIN: VmActionName[] = ["pause", "softReboot", "reset", "console", "vnc"];
const LIVE: VmActionName[] = ["stop", "forceStop", "restart", "delete"];

// One VM (and VMI) as the controller prints each status, with what can be
// done to it: the actions listed as available and no other; the reasons of
// some of the others. Rows after the first per status vary the run strategy.
const TABLE: [string, PrintableStatus, Vm, Vmi | undefined, VmActionName[], Partial<Record<VmActionName, string>>][] = [
  [
    "a halted VM",
    "Stopped",
    vm("Halted"),
    undefined,
    ["start", "delete"],
    {
      stop: "VM is not running",
      forceStop: "VM is not running",
      restart: "RunStategy Halted does not support manual restart requests",
      pause: "the VM is not running; start it first",
      unpause: "the VM is not running; start it first",
      console: "the VM is not running; start it and try again",
    },
  ],
  [
    "a Manual VM without a VMI",
    "Stopped",
    vm("Manual"),
    undefined,
    ["start", "delete"],
    { stop: "VM is not running", restart: "VM is not running: Halted" },
  ],
  [
    "a RerunOnFailure VM whose guest shut down",
    "Stopped",
    vm("RerunOnFailure"),
    vmi("Succeeded"),
    ["start", "restart", "delete"],
    { stop: "VM is not running" },
  ],
  [
    "an Always VM whose volumes are being prepared",
    "Provisioning",
    vm("Always"),
    undefined,
    ["stop", "forceStop", "delete"],
    { start: "Always does not support manual start requests", restart: "VM is not running: Halted" },
  ],
  [
    "an Always VM whose VMI is being scheduled",
    "Starting",
    vm("Always"),
    vmi("Scheduling"),
    LIVE,
    {
      start: "the VM is already starting",
      pause: "the VMI is not running (phase Scheduling); pause needs a running VMI",
      softReboot: "the VMI is not running (phase Scheduling); soft reboot needs a running VMI",
      console: "the VMI is not running (phase Scheduling); wait until it is Running",
    },
  ],
  [
    "a running VM",
    "Running",
    vm("Always"),
    vmi("Running"),
    [...LIVE, ...ALL_DOMAIN],
    { start: "the VM is already running", unpause: "the VMI is not paused" },
  ],
  [
    "a running Manual VM",
    "Running",
    vm("Manual"),
    vmi("Running"),
    [...LIVE, ...ALL_DOMAIN],
    { start: "the VM is already running" },
  ],
  [
    "a running VM without a serial console",
    "Running",
    vm("Always", { serial: false }),
    { ...vmi("Running"), spec: { domain: { devices: { autoattachSerialConsole: false } } } },
    [...LIVE, "pause", "softReboot", "reset", "vnc"],
    {
      console: "the VMI has no serial console: spec.domain.devices.autoattachSerialConsole is false",
    },
  ],
  [
    "a paused VM",
    "Paused",
    vm("Always"),
    vmi("Running", paused),
    [...LIVE, "unpause", "console", "vnc"],
    {
      start: "the VM is running, paused; Unpause resumes it",
      pause: "the VMI is already paused",
      softReboot: "the VMI is paused; unpause it before soft reboot",
      reset: "the VMI is paused; unpause it before reset",
    },
  ],
  [
    "a halted VM whose VMI still runs",
    "Stopping",
    vm("Halted"),
    vmi("Running"),
    ["forceStop", "delete", "console", "vnc"],
    {
      start: "the VM is stopping; start it again once it has stopped",
      stop: "the VM is already stopping; Force stop turns it off now",
      restart: "the VM is stopping; Force stop turns it off now",
      pause: "the VM is stopping; Force stop turns it off now",
      reset: "the VM is stopping; Force stop turns it off now",
    },
  ],
  [
    "an Always VM whose VMI is being deleted (a restart)",
    "Stopping",
    vm("Always"),
    vmi("Running", { deleting: true }),
    ["forceStop", "delete", "console", "vnc"],
    { stop: "the VM is already stopping; Force stop turns it off now" },
  ],
  [
    "a VM being deleted",
    "Terminating",
    vm("Always", { deleting: true }),
    vmi("Running", { deleting: true }),
    ["forceStop", "console", "vnc"],
    {
      start: "the VM is being deleted",
      pause: "the VM is being deleted",
      stop: "the VM is being deleted",
      restart: "the VM is being deleted",
      delete: "the VM is already being deleted",
    },
  ],
  [
    "a VM being deleted, its VMI gone",
    "Terminating",
    vm("Always", { deleting: true }),
    undefined,
    [],
    { forceStop: "the VM is being deleted" },
  ],
  [
    "an Always VM whose guest keeps failing",
    "CrashLoopBackOff",
    vm("Always"),
    vmi("Failed"),
    LIVE,
    {
      start: "Always does not support manual start requests",
      pause: "the VMI is not running (phase Failed); pause needs a running VMI",
      console: "the VMI is not running (phase Failed); start it and try again",
    },
  ],
  [
    "a running VM on its way to another node",
    "Migrating",
    vm("Always"),
    vmi("Running"),
    [...LIVE, ...ALL_DOMAIN],
    { start: "the VM is already running; it is moving to another node" },
  ],
  [
    "a VM whose VMI's node is lost",
    "Unknown",
    vm("Always"),
    vmi("Unknown"),
    LIVE,
    { start: "Always does not support manual start requests" },
  ],
  [
    "a halted VM whose VMI's node is lost",
    "Unknown",
    vm("Halted"),
    vmi("Unknown"),
    ["start", "forceStop", "delete"],
    { stop: "Halted only supports manual stop requests with a shorter graceperiod" },
  ],
  [
    "a VM that fits no node",
    "ErrorUnschedulable",
    vm("Always"),
    vmi("Scheduling", { conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }] }),
    LIVE,
    { start: "the VM is already starting, but cannot be placed on a node; stop it, or remove what stands in its way" },
  ],
  [
    "a VM whose image cannot be pulled",
    "ErrImagePull",
    vm("Always"),
    vmi("Scheduled", { conditions: [{ type: "Synchronized", status: "False", reason: "ErrImagePull" }] }),
    LIVE,
    {
      reset: "the VMI is not running (phase Scheduled); reset needs a running VMI",
    },
  ],
  [
    "a VM whose image pull backs off",
    "ImagePullBackOff",
    vm("Always"),
    vmi("Scheduled", { conditions: [{ type: "Synchronized", status: "False", reason: "ImagePullBackOff" }] }),
    LIVE,
    {},
  ],
  [
    "a VM whose claim is missing",
    "ErrorPvcNotFound",
    vm("Always"),
    vmi("Pending"),
    LIVE,
    { vnc: "the VMI is not running (phase Pending); wait until it is Running" },
  ],
  ["a VM waiting for its volume to bind", "WaitingForVolumeBinding", vm("Always"), vmi("Pending"), LIVE, {}],
  [
    "an Always VM whose DataVolume failed to import",
    "DataVolumeError",
    vm("Always"),
    undefined,
    ["stop", "forceStop", "delete"],
    { start: "Always does not support manual start requests", restart: "VM is not running: Halted" },
  ],
];

describe("availableActions", () => {
  it("has a row for every printable status", () => {
    expect(new Set(TABLE.map((row) => row[1]))).toEqual(new Set(PRINTABLE_STATUSES));
  });

  it.each(TABLE)("%s (%s)", (_, printableStatus, theVm, theVmi, available, reasons) => {
    const actions = availableActions({ ...theVm, status: { printableStatus } }, theVmi);
    expect(VM_ACTIONS.filter((a) => actions[a].available).sort()).toEqual([...available].sort());
    for (const action of VM_ACTIONS) {
      const answer = actions[action];
      if (answer.available) continue;
      // Every refusal says why, in words.
      expect(answer.reason.length).toBeGreaterThan(10);
      const expected = reasons[action];
      if (expected !== undefined) expect(answer.reason).toBe(expected);
    }
  });

  it("does not unpause a VM while a snapshot of it is under way (KubeVirt's rule: it may hold the pause)", () => {
    const taking = { printableStatus: "Paused", snapshotInProgress: "snap-1" } as const;
    const actions = availableActions({ ...vm("Always"), status: taking }, vmi("Running", paused));
    expect(actions.unpause).toEqual({
      available: false,
      by: "state",
      reason:
        "VM snapshot is in progress: snapshot snap-1 of the VM is under way and resumes the VM when it is done; " +
        "wait for it, or delete the snapshot",
    });
    // Once it is done, or for a VMI that is not paused, as before.
    const done = availableActions({ ...vm("Always"), status: { printableStatus: "Paused" } }, vmi("Running", paused));
    expect(done.unpause).toEqual({ available: true });
    const running = availableActions(
      { ...vm("Always"), status: { ...taking, printableStatus: "Running" } },
      vmi("Running"),
    );
    expect(running.unpause).toMatchObject({ available: false, reason: "the VMI is not paused" });
  });

  it("tells a lasting refusal (the spec) from a passing one (the state)", () => {
    expect(
      availableActions({ ...vm("Manual"), spec: { ...vm("Manual").spec, running: true } }, undefined).start,
    ).toMatchObject({ available: false, by: "spec", reason: "running and runstrategy are mutually exclusive" });
    expect(availableActions(vm("Always", { serial: false }), undefined).console).toMatchObject({
      available: false,
      by: "spec",
    });
    expect(availableActions(vm("Always"), vmi("Running")).start).toMatchObject({ available: false, by: "state" });
  });
});

describe("vmiActionAvailability", () => {
  it("answers the handler, which knows the VMI only, as availableActions does", () => {
    for (const theVmi of [vmi("Running"), vmi("Running", paused), vmi("Scheduled")]) {
      const actions = availableActions(vm("Always"), theVmi);
      for (const action of ["pause", "unpause", "softReboot", "reset", "console", "vnc"] as const)
        expect(vmiActionAvailability(theVmi, action)).toEqual(actions[action]);
    }
  });
});

describe("port forwards", () => {
  it("reach a Running VMI that has an interface on the pod network", () => {
    const onPodNetwork = (phase: string) => {
      const theVmi = vmi(phase);
      return {
        ...theVmi,
        spec: {
          ...theVmi.spec,
          domain: { devices: { interfaces: [{ name: "default", masquerade: {} }] } },
          networks: [{ name: "default", pod: {} }],
        },
      } as Vmi;
    };
    expect(podNetworkInterface(onPodNetwork("Running").spec)).toBe("default");
    expect(vmiActionAvailability(onPodNetwork("Running"), "portforward")).toEqual({ available: true });
    expect(vmiActionAvailability(onPodNetwork("Scheduled"), "portforward")).toMatchObject({
      available: false,
      by: "state",
    });
    expect(vmiActionAvailability(vmi("Running"), "portforward")).toMatchObject({
      available: false,
      by: "spec",
      reason: expect.stringContaining("no interface on the pod network") as unknown,
    });
  });
});

describe("IPv4 networks", () => {
  it("are read from a CIDR as the network's own address, and nothing else is one", () => {
    expect(parseIpv4Network("198.18.77.9/26")).toEqual({ address: "198.18.77.0", prefix: 26 });
    expect(parseIpv4Network("198.19.254.0/24")).toEqual({ address: "198.19.254.0", prefix: 24 });
    for (const bad of ["198.19.254.0", "198.19.256.0/24", "198.19.254.0/33", "a.b.c.d/8"])
      expect(parseIpv4Network(bad)).toBeUndefined();
  });
});
