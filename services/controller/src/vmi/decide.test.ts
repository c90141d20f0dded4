import { type ClaimObject, PhaseOwner, isAllowedTransition, isHandedOver } from "@kubevirt-ts/vm-rules";
import { type VirtualMachineInstance, VmiPhase } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type VmiObservation, decideVmi, deriveVmiStatus, isOutdatedLauncher } from "./decide.ts";
import type { Pod } from "@kubevirt-ts/kube";

const now = new Date("2026-01-01T00:00:10Z");

function vmi(phase?: string, extra: Partial<VirtualMachineInstance["metadata"]> = {}): VirtualMachineInstance {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "vmi", namespace: "ns", uid: "vmi-uid", ...extra },
    spec: { domain: { devices: {} } },
    ...(phase
      ? {
          status: {
            phase: phase as "Pending",
            phaseTransitionTimestamps: [
              { phase: phase as "Pending", phaseTransitionTimestamp: "2026-01-01T00:00:00Z" },
            ],
          },
        }
      : {}),
  };
}

function pod(name: string, status: Pod["status"], extra: Partial<Pod["metadata"]> = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "ns", uid: `${name}-uid`, ...extra },
    spec: { nodeName: "node-1", containers: [] },
    status,
  };
}

/** A container's status as the kubelet reports it, not started yet. */
const waitingContainer = (name: string, waiting: { reason: string; message?: string }) => ({
  name,
  ready: false,
  image: "",
  imageID: "",
  restartCount: 0,
  state: { waiting },
});

const pending = pod("p1", { phase: "Pending", conditions: [{ type: "PodScheduled", status: "True" }] });
const unschedulable = pod("p1", {
  phase: "Pending",
  conditions: [
    {
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message: "0/1 nodes are available: 1 Insufficient memory.",
    },
  ],
});
const pulling = pod("p1", {
  phase: "Pending",
  containerStatuses: [waitingContainer("compute", { reason: "ImagePullBackOff", message: "Back-off pulling image" })],
});
/** The launcher container running, its startup probe passed (started) or not yet. */
const launcherContainer = (started: boolean) => ({
  name: "compute",
  ready: started,
  started,
  image: "",
  imageID: "",
  restartCount: 0,
  state: { running: {} },
});
const runningNotReady = pod("p1", {
  phase: "Running",
  conditions: [{ type: "Ready", status: "False" }],
  containerStatuses: [launcherContainer(false)],
});
const runningReady = pod("p1", {
  phase: "Running",
  conditions: [{ type: "Ready", status: "True" }],
  containerStatuses: [launcherContainer(true)],
});
/** Started, but not ready: the guest's readiness probe fails; the VMI is handed over all the same. */
const startedGuestNotReady = pod("p1", {
  phase: "Running",
  conditions: [{ type: "Ready", status: "False" }],
  containerStatuses: [{ ...launcherContainer(true), ready: false }],
});
const failedPod = pod("p1", { phase: "Failed", message: "OOMKilled" });

const observe = (
  v: VirtualMachineInstance,
  pods: Pod[],
  invalid?: string,
  claims: ReadonlyMap<string, ClaimObject> = new Map(),
): VmiObservation => ({ vmi: v, pods, invalid, claims, now });

/** A VMI with a disk on the claim "data", and that claim, bound, of 2Gi requested and 2Gi provided. */
const withClaim = (): VirtualMachineInstance => {
  const v = vmi();
  v.spec.volumes = [...(v.spec.volumes ?? []), { name: "data", persistentVolumeClaim: { claimName: "data-claim" } }];
  return v;
};
const dataClaim: ClaimObject = {
  metadata: { name: "data-claim" },
  spec: { accessModes: ["ReadWriteOnce"], volumeMode: "Filesystem", resources: { requests: { storage: "2Gi" } } },
  status: { phase: "Bound", capacity: { storage: "2Gi" } },
};

describe("decideVmi", () => {
  it.each([
    ["a new VMI gets a launcher pod", observe(vmi(), []), "createPod"],
    ["a pending VMI gets a launcher pod", observe(vmi("Pending"), []), "createPod"],
    ["an invalid VMI gets none", observe(vmi(), [], "spec.domain.memory.guest is required"), "none"],
    ["a VMI with its pod needs nothing", observe(vmi("Scheduling"), [pending]), "none"],
    ["a scheduled VMI whose pod is gone gets no new one", observe(vmi("Scheduled"), []), "none"],
    ["a second pod is deleted", observe(vmi("Scheduling"), [pending, pod("p2", { phase: "Pending" })]), "deletePods"],
    [
      "a deleted VMI's pod is deleted",
      observe(vmi("Scheduled", { deletionTimestamp: "2026-01-01T00:00:05Z" }), [runningReady]),
      "deletePods",
    ],
    ["a finished VMI's pod is deleted", observe(vmi("Failed"), [failedPod]), "deletePods"],
    [
      "a deleted VMI's pod already going, with more time than the VMI now gives it (a forced stop), is deleted again",
      observe(
        {
          ...vmi("Running", { deletionTimestamp: "2026-01-01T00:00:05Z" }),
          spec: { ...vmi().spec, terminationGracePeriodSeconds: 0 },
        },
        [
          {
            ...runningReady,
            metadata: {
              ...runningReady.metadata,
              deletionTimestamp: "2026-01-01T00:00:05Z",
              deletionGracePeriodSeconds: 615,
            },
          },
        ],
      ),
      "deletePods",
    ],
    [
      "a deleted VMI's pod already going is left to go",
      observe(vmi("Running", { deletionTimestamp: "2026-01-01T00:00:05Z" }), [
        {
          ...runningReady,
          metadata: {
            ...runningReady.metadata,
            deletionTimestamp: "2026-01-01T00:00:05Z",
            deletionGracePeriodSeconds: runningReady.spec?.terminationGracePeriodSeconds ?? 0,
          },
        },
      ]),
      "none",
    ],
    ["a VMI whose claim is missing gets no pod", observe(withClaim(), []), "none"],
    [
      "a VMI whose claim is there gets its pod",
      observe(withClaim(), [], undefined, new Map([["data-claim", dataClaim]])),
      "createPod",
    ],
    [
      "a VMI whose claim is in Block mode gets its pod (the device is given to the launcher)",
      observe(
        withClaim(),
        [],
        undefined,
        new Map([["data-claim", { ...dataClaim, spec: { ...dataClaim.spec, volumeMode: "Block" } }]]),
      ),
      "createPod",
    ],
  ] as const)("%s", (_name, observation, kind) => {
    expect(decideVmi(observation).kind).toBe(kind);
  });
});

describe("deriveVmiStatus with claims", () => {
  it("says which claim is missing, in KubeVirt's reason, and stays Pending", () => {
    const status = deriveVmiStatus(observe(withClaim(), []));
    expect(status.phase).toBe("Pending");
    const synchronized = status.conditions?.find((c) => c.type === "Synchronized");
    expect(synchronized).toMatchObject({ status: "False", reason: "FailedPvcNotFound" });
    expect(synchronized?.message).toContain("PVC ns/data-claim does not exist");
  });

  it("holds nothing for a Block-mode claim, and reports its mode", () => {
    const status = deriveVmiStatus(
      observe(
        withClaim(),
        [],
        undefined,
        new Map([["data-claim", { ...dataClaim, spec: { ...dataClaim.spec, volumeMode: "Block" } }]]),
      ),
    );
    expect(status.conditions?.find((c) => c.type === "Synchronized")).toBeUndefined();
    expect(status.volumeStatus?.find((v) => v.persistentVolumeClaimInfo)?.persistentVolumeClaimInfo?.volumeMode).toBe(
      "Block",
    );
  });

  it("reports each volume, with the claim's mode, size and access modes, sorted by name", () => {
    const status = deriveVmiStatus(observe(withClaim(), [], undefined, new Map([["data-claim", dataClaim]])));
    expect(status.conditions?.find((c) => c.type === "Synchronized")).toBeUndefined();
    expect(status.volumeStatus?.map((v) => v.name)).toEqual(
      [...(withClaim().spec.volumes ?? []).map((v) => v.name)].sort(),
    );
    expect(status.volumeStatus?.find((v) => v.name === "data")).toEqual({
      name: "data",
      target: "",
      persistentVolumeClaimInfo: {
        claimName: "data-claim",
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
        capacity: { storage: "2Gi" },
        requests: { storage: "2Gi" },
        preallocated: false,
        filesystemOverhead: "0.055",
      },
    });
  });

  it("keeps the targets the handler reported", () => {
    const v = withClaim();
    v.status = { phase: "Running", volumeStatus: [{ name: "data", target: "vdb" }] };
    expect(
      deriveVmiStatus(observe(v, [runningReady], undefined, new Map([["data-claim", dataClaim]]))).volumeStatus?.find(
        (s) => s.name === "data",
      )?.target,
    ).toBe("vdb");
  });
});

describe("deriveVmiStatus", () => {
  it.each([
    ["no pod yet: Pending", observe(vmi(), []), "Pending"],
    ["a pod waiting to be scheduled: Scheduling", observe(vmi("Pending"), [pending]), "Scheduling"],
    [
      "a running pod whose launcher is not ready: Scheduling",
      observe(vmi("Scheduling"), [runningNotReady]),
      "Scheduling",
    ],
    ["a running pod with a ready launcher: Scheduled", observe(vmi("Scheduling"), [runningReady]), "Scheduled"],
    [
      "a started launcher whose guest is not ready yet: Scheduled",
      observe(vmi("Scheduling"), [startedGuestNotReady]),
      "Scheduled",
    ],
    ["a pod that fails before hand-over: Failed", observe(vmi("Scheduling"), [failedPod]), "Failed"],
    ["a pod that disappears after hand-over: Failed", observe(vmi("Scheduled"), []), "Failed"],
    [
      "a running VMI whose launcher exited cleanly (its guest shut off before the handler saw it): Succeeded",
      observe(vmi("Running"), [pod("p1", { phase: "Succeeded" })]),
      "Succeeded",
    ],
    ["a running VMI whose launcher failed: Failed", observe(vmi("Running"), [failedPod]), "Failed"],
    [
      "a pod that completes before hand-over: Failed",
      observe(vmi("Scheduling"), [pod("p1", { phase: "Succeeded" })]),
      "Failed",
    ],
    ["after hand-over the handler owns the phase", observe(vmi("Running"), [runningReady]), "Running"],
  ] as const)("%s", (_name, observation, phase) => {
    expect(deriveVmiStatus(observation).phase).toBe(phase);
  });

  // Every phase the controller starts from (kubevirt-ts writes no Unknown) against every kind of pod it may see: it
  // moves only along the state machine's controller transitions, and leaves a handed-over VMI's phase alone while its
  // pod lives.
  const podsSeen: Record<string, Pod[]> = {
    none: [],
    pending: [pending],
    unschedulable: [unschedulable],
    pulling: [pulling],
    runningNotReady: [runningNotReady],
    runningReady: [runningReady],
    failed: [failedPod],
    succeeded: [pod("p1", { phase: "Succeeded" })],
  };
  const fromPhases = [
    undefined,
    VmiPhase.Pending,
    VmiPhase.Scheduling,
    VmiPhase.Scheduled,
    VmiPhase.Running,
    VmiPhase.Succeeded,
    VmiPhase.Failed,
  ];
  it.each(fromPhases.flatMap((from) => Object.keys(podsSeen).map((seen) => [from ?? "no phase", seen, from] as const)))(
    "from %s with pod %s it follows the state machine",
    (_name, seen, from) => {
      const { phase } = deriveVmiStatus(observe(vmi(from), podsSeen[seen] ?? []));
      if (phase !== (from ?? VmiPhase.Pending))
        expect(isAllowedTransition(from, phase ?? VmiPhase.Pending, PhaseOwner.Controller)).toBe(true);
      if (isHandedOver(from) && !["none", "failed", "succeeded"].includes(seen)) expect(phase).toBe(from);
    },
  );

  it("hands the VMI to its node when it is scheduled, with a timestamp for the transition", () => {
    const status = deriveVmiStatus(observe(vmi("Scheduling"), [runningReady]));
    expect(status.nodeName).toBe("node-1");
    expect(status.phaseTransitionTimestamps?.at(-1)).toEqual({
      phase: "Scheduled",
      phaseTransitionTimestamp: "2026-01-01T00:00:10Z",
    });
    expect(status.activePods).toEqual({ "p1-uid": "node-1" });
  });

  it("names the pod in activePods from the hand-over on, not while the pod starts (one write fewer)", () => {
    const starting = deriveVmiStatus(observe(vmi("Scheduling"), [runningNotReady]));
    expect(starting.activePods).toBeUndefined();
    expect(deriveVmiStatus(observe({ ...vmi("Scheduling"), status: starting }, [runningNotReady]))).toEqual(starting);
  });

  it("carries the scheduler's message when the pod cannot be scheduled", () => {
    const status = deriveVmiStatus(observe(vmi("Scheduling"), [unschedulable]));
    expect(status.conditions?.find((c) => c.type === "PodScheduled")).toMatchObject({
      status: "False",
      reason: "Unschedulable",
      message: "0/1 nodes are available: 1 Insufficient memory.",
    });
  });

  it("reports an image that cannot be pulled", () => {
    expect(
      deriveVmiStatus(observe(vmi("Scheduling"), [pulling])).conditions?.find((c) => c.type === "Synchronized"),
    ).toMatchObject({ status: "False", reason: "ImagePullBackOff" });
  });

  it("leaves the handler's Synchronized condition on a VMI handed over to it, until the VMI ends", () => {
    const failing = {
      type: "Synchronized",
      status: "False" as const,
      reason: "LauncherProtocolViolation",
      message: "the launcher broke the protocol (InvalidJson)",
    };
    const scheduled = vmi("Scheduled");
    const handedOver = { ...scheduled, status: { ...scheduled.status, conditions: [failing] } };
    expect(
      deriveVmiStatus(observe(handedOver, [runningReady])).conditions?.find((c) => c.type === "Synchronized"),
    ).toEqual(failing);
    expect(
      deriveVmiStatus(observe(handedOver, [failedPod])).conditions?.find((c) => c.type === "Synchronized"),
    ).toBeUndefined();
  });

  it(
    "gives the launcher's own word on its end as the reason a VMI failed, " + "such as a liveness probe that failed",
    () => {
      const killed = pod("p1", {
        phase: "Failed",
        containerStatuses: [
          {
            ...launcherContainer(true),
            state: {
              terminated: {
                exitCode: 1,
                reason: "Error",
                message: "The liveness probe failed: tcp port 80: refused\n",
              },
            },
          },
        ],
      });
      const status = deriveVmiStatus(observe(vmi("Running"), [killed]));
      expect(status).toMatchObject({
        phase: "Failed",
        reason: "LauncherPodFailed",
        message: "The virt-launcher pod ended (Failed): The liveness probe failed: tcp port 80: refused.",
      });
    },
  );

  it("reports an invalid spec as a condition, staying Pending", () => {
    const status = deriveVmiStatus(observe(vmi(), [], "spec.domain.memory.guest is required"));
    expect(status.phase).toBe("Pending");
    expect(status.conditions?.find((c) => c.type === "Synchronized")).toMatchObject({
      status: "False",
      reason: "InvalidSpec",
      message: "spec.domain.memory.guest is required",
    });
  });

  it("says which Secrets a launcher pod that started nothing waits for, and drops it once the pod runs", () => {
    const waitingPod: Pod = {
      ...pending,
      spec: {
        nodeName: "node-1",
        containers: [],
        volumes: [{ name: "cloud-init-1-userdata", secret: { secretName: "vm-user" } }],
      },
      status: { phase: "Pending", containerStatuses: [waitingContainer("compute", { reason: "ContainerCreating" })] },
    };
    const status = deriveVmiStatus(observe(vmi("Scheduling"), [waitingPod]));
    expect(status.conditions?.find((c) => c.type === "Synchronized")).toMatchObject({
      status: "False",
      reason: "LauncherPodWaiting",
      message: expect.stringContaining("cloud-init Secret vm-user, which must exist in namespace ns") as unknown,
    });
    expect(
      deriveVmiStatus(observe({ ...vmi("Scheduling"), status }, [runningReady])).conditions?.find(
        (c) => c.type === "Synchronized",
      ),
    ).toBeUndefined();
  });

  it("changes nothing when nothing changed", () => {
    const first = deriveVmiStatus(observe(vmi("Pending"), [pending]));
    const again = deriveVmiStatus({
      ...observe({ ...vmi("Pending"), status: first }, [pending]),
      now: new Date(now.getTime() + 5_000),
    });
    expect(again).toEqual(first);
  });
});

describe("the launcher image a VMI runs in (KubeVirt's launcherContainerImageVersion)", () => {
  const inImage = (image: string, phase: Pod["status"] = { phase: "Running" }): Pod => ({
    ...pod("p1", phase),
    spec: { nodeName: "node-1", containers: [{ name: "compute", image }] },
  });

  it("is reported once the VMI runs, and is outdated while it is not the installed launcher's", () => {
    expect(deriveVmiStatus(observe(vmi("Scheduled"), [inImage("launcher:1")])).launcherContainerImageVersion).toBe(
      undefined,
    );
    const running = deriveVmiStatus(observe(vmi("Running"), [inImage("launcher:1")]));
    expect(running.launcherContainerImageVersion).toBe("launcher:1");
    expect(isOutdatedLauncher(running, "launcher:1")).toBe(false);
    expect(isOutdatedLauncher(running, "launcher:2")).toBe(true);
    // Not known yet: not outdated.
    expect(isOutdatedLauncher({ phase: "Running" }, "launcher:2")).toBe(false);
  });

  it("is forgotten when the VMI ended: an ended VMI is not outdated", () => {
    const before = { ...vmi("Running"), status: { phase: "Running" as const, launcherContainerImageVersion: "l:1" } };
    const ended = deriveVmiStatus(observe(before, [inImage("l:1", { phase: "Failed" })]));
    expect(ended.phase).toBe("Failed");
    expect(ended.launcherContainerImageVersion).toBeUndefined();
    expect(isOutdatedLauncher({ ...ended, launcherContainerImageVersion: "l:1" }, "l:2")).toBe(false);
  });
});

describe("live migration, the VMI controller's part", () => {
  it("says whether the VMI can move, and how: LiveMigratable and migrationMethod", () => {
    const status = deriveVmiStatus(
      observe(withClaim(), [runningReady], undefined, new Map([["data-claim", dataClaim]])),
    );
    expect(status.conditions?.find((c) => c.type === "LiveMigratable")).toMatchObject({
      status: "False",
      reason: "DisksNotLiveMigratable",
      message: expect.stringContaining("data-claim") as unknown,
    });
    expect(status.migrationMethod).toBe("LiveMigration");
    const shared = { ...dataClaim, spec: { ...dataClaim.spec, accessModes: ["ReadWriteMany"] } };
    expect(
      deriveVmiStatus(
        observe(withClaim(), [runningReady], undefined, new Map([["data-claim", shared]])),
      ).conditions?.find((c) => c.type === "LiveMigratable")?.status,
    ).toBe("True");
  });

  it("moves a VMI whose migration completed to the target's node and pod, and deletes the source pod it left", () => {
    const moving = vmi("Running");
    const target = pod(
      "target",
      { phase: "Running", containerStatuses: [launcherContainer(true)] },
      { labels: { "kubevirt.io/migrationJobUID": "m1" } },
    );
    target.spec = { nodeName: "node-2", containers: [] };
    moving.status = {
      ...moving.status,
      nodeName: "node-1",
      evacuationNodeName: "node-1",
      activePods: { "p1-uid": "node-1" },
      migrationState: {
        migrationUid: "m1",
        sourceNode: "node-1",
        targetNode: "node-2",
        targetPod: "target",
        completed: true,
      },
    };
    const o = { ...observe(moving, [target]), left: [runningReady] };
    expect(decideVmi(o)).toEqual({ kind: "deletePods", pods: [runningReady] });
    const status = deriveVmiStatus(o);
    expect(status).toMatchObject({ phase: "Running", nodeName: "node-2", activePods: { "target-uid": "node-2" } });
    expect(status.evacuationNodeName).toBeUndefined();
  });
});
