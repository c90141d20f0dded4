import { describe, expect, it } from "vitest";
import type { PersistentVolumeClaim, Pod } from "@kubevirt-ts/kube";
import {
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  controllerRef,
} from "@kubevirt-ts/kubevirt-api";
import {
  SNAPSHOT_FINALIZER,
  type SnapshotAction,
  type SnapshotObservation,
  decideSnapshot,
  failedStepStatus,
  quiesceOf,
  sourceInUse,
} from "./decide.ts";

const NOW = new Date("2026-01-01T00:01:00Z");
const UID = "s-uid";

const snapshot = (over: Partial<VirtualMachineSnapshot> = {}): VirtualMachineSnapshot => ({
  apiVersion: "snapshot.kubevirt.io/v1beta1",
  kind: "VirtualMachineSnapshot",
  metadata: {
    name: "snap",
    namespace: "ns",
    uid: UID,
    creationTimestamp: "2026-01-01T00:00:00Z",
    finalizers: [SNAPSHOT_FINALIZER],
  },
  spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" } },
  ...over,
});

const vm = (status: VirtualMachine["status"] = { snapshotInProgress: "snap" }): VirtualMachine => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "vm", namespace: "ns", uid: "vm-uid", generation: 3, labels: { app: "db" } },
  spec: {
    runStrategy: "Halted",
    template: {
      spec: {
        domain: { devices: {} },
        volumes: [
          { name: "root", dataVolume: { name: "root-dv" } },
          { name: "data", persistentVolumeClaim: { claimName: "data-pvc" } },
          { name: "boot", containerDisk: { image: "quay.io/containerdisks/fedora" } },
          { name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config" } },
        ],
      },
    },
  },
  status,
});

const claim = (name: string): PersistentVolumeClaim => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, namespace: "ns", labels: { disk: name } },
  spec: {
    accessModes: ["ReadWriteOnce"],
    storageClassName: "local-path",
    volumeMode: "Filesystem",
    resources: { requests: { storage: "2Gi" } },
  },
});

const vmi = (agent: boolean, more: Partial<NonNullable<VirtualMachineInstance["status"]>> = {}) =>
  ({
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "vm", namespace: "ns" },
    spec: { domain: { devices: {} } },
    status: {
      phase: "Running",
      conditions: agent ? [{ type: "AgentConnected", status: "True" }] : [],
      ...more,
    },
  }) as VirtualMachineInstance;

const copyName = (volume: string) => `vmsnapshot-${UID}-volume-${volume}`;
const pod = (phase: string): Pod => ({ apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, status: { phase } });

function observe(over: Partial<SnapshotObservation> = {}): SnapshotObservation {
  const claims = new Map([
    ["root-dv", claim("root-dv")],
    ["data-pvc", claim("data-pvc")],
  ]);
  return {
    snapshot: snapshot(),
    vm: vm(),
    vmi: undefined,
    content: undefined,
    claim: (name) => claims.get(name),
    copyPod: () => undefined,
    foreignPod: () => undefined,
    copier: true,
    now: NOW,
    ...over,
  };
}

/** The content the controller writes for the observation, as the API server would keep it. */
function contentOf(o: SnapshotObservation, status?: VirtualMachineSnapshotContent["status"]) {
  const made = decideSnapshot(o).actions.find((a) => a.kind === "createContent");
  if (made?.kind !== "createContent") throw new Error("no content made");
  return { ...made.content, metadata: { ...made.content.metadata, uid: "c-uid" }, ...(status ? { status } : {}) };
}

const kinds = (actions: SnapshotAction[]) => actions.map((a) => a.kind);

describe("a snapshot of a stopped VM", () => {
  it("is held by KubeVirt's finalizer and marks the VM first", () => {
    const d = decideSnapshot(
      observe({ snapshot: snapshot({ metadata: { ...snapshot().metadata, finalizers: [] } }), vm: vm({}) }),
    );
    expect(d.actions).toEqual([{ kind: "addFinalizer" }, { kind: "markVm", snapshot: "snap", vm: vm({}) }]);
    expect(d.status).toMatchObject({ phase: "InProgress", readyToUse: false, sourceUID: "vm-uid" });
  });

  it("writes the content: the VM as it is, and a backup of each claim volume named as KubeVirt names it", () => {
    const d = decideSnapshot(observe());
    const content = contentOf(observe());
    expect(content.metadata).toMatchObject({
      name: `vmsnapshot-content-${UID}`,
      namespace: "ns",
      annotations: { "snapshot.kubevirt-ts.io/volume-copy-kind": "PersistentVolumeClaim" },
      ownerReferences: [{ kind: "VirtualMachineSnapshot", name: "snap", uid: UID, controller: true }],
    });
    expect(content.spec.source.virtualMachine?.metadata).toEqual({
      name: "vm",
      namespace: "ns",
      uid: "vm-uid",
      generation: 3,
      labels: { app: "db" },
    });
    expect(content.spec.source.virtualMachine?.spec).toEqual(vm().spec);
    expect(
      content.spec.volumeBackups?.map((b) => [
        b.volumeName,
        b.persistentVolumeClaim.metadata?.name,
        b.volumeSnapshotName,
      ]),
    ).toEqual([
      ["root", "root-dv", copyName("root")],
      ["data", "data-pvc", copyName("data")],
    ]);
    expect(content.spec.volumeBackups?.[0]?.persistentVolumeClaim.spec).toEqual(claim("root-dv").spec);
    expect(d.status).toMatchObject({
      phase: "InProgress",
      virtualMachineSnapshotContentName: `vmsnapshot-content-${UID}`,
      snapshotVolumes: { includedVolumes: ["root", "data"], excludedVolumes: ["boot", "cloudinit"] },
      indications: [],
    });
  });

  it("keeps its content when it retains it: no owner", () => {
    const o = observe({ snapshot: snapshot({ spec: { ...snapshot().spec, deletionPolicy: "Retain" } }) });
    expect(contentOf(o).metadata.ownerReferences).toBeUndefined();
  });

  it("copies each claim into a claim of the same class, modes and size, owned by the content, read as it rests", () => {
    const content = contentOf(observe());
    const d = decideSnapshot(observe({ content, snapshot: snapshot({ status: decideSnapshot(observe()).status }) }));
    expect(kinds(d.actions)).toEqual(["createCopyClaim", "createCopyPod", "createCopyClaim", "createCopyPod"]);
    const [claimAction, podAction] = d.actions;
    expect(claimAction).toMatchObject({
      kind: "createCopyClaim",
      claim: {
        metadata: {
          name: copyName("root"),
          namespace: "ns",
          ownerReferences: [{ kind: "VirtualMachineSnapshotContent", uid: "c-uid" }],
        },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: "local-path",
          volumeMode: "Filesystem",
          resources: { requests: { storage: "2Gi" } },
        },
      },
    });
    expect(podAction).toEqual({
      kind: "createCopyPod",
      volume: "root",
      source: "root-dv",
      target: copyName("root"),
      inUse: false,
    });
  });

  it("records each copy done, then is ready once all are, lets go of the VM and removes its copy pods", () => {
    const started = decideSnapshot(observe()).status;
    const content = contentOf(observe());
    const copying = observe({
      content,
      snapshot: snapshot({ status: started }),
      claim: (n) => claim(n),
      copyPod: (t) => (t === copyName("root") ? pod("Succeeded") : pod("Running")),
    });
    const d = decideSnapshot(copying);
    expect(d.actions).toEqual([
      {
        kind: "writeContentStatus",
        status: {
          readyToUse: false,
          volumeSnapshotStatus: [
            { volumeSnapshotName: copyName("root"), creationTime: "2026-01-01T00:01:00Z", readyToUse: true },
          ],
        },
      },
    ]);
    expect(d.status.phase).toBe("InProgress");
    expect(d.status.conditions?.find((c) => c.type === "Progressing")).toMatchObject({
      status: "True",
      message: "Copying 2 of 2 volumes",
    });

    const allCopied = {
      ...content,
      status: {
        volumeSnapshotStatus: ["root", "data"].map((v) => ({ volumeSnapshotName: copyName(v), readyToUse: true })),
      },
    };
    const done = decideSnapshot({ ...copying, content: allCopied, copyPod: () => pod("Succeeded") });
    expect(kinds(done.actions)).toEqual(["writeContentStatus", "markVm", "deleteCopyPod", "deleteCopyPod"]);
    expect(done.actions[1]).toMatchObject({ kind: "markVm", snapshot: null });
    expect(done.status).toMatchObject({ phase: "Succeeded", readyToUse: true, creationTime: "2026-01-01T00:01:00Z" });
    expect(done.status.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Progressing", "False"],
      ["Ready", "True"],
    ]);
  });
});

describe("a snapshot of a running VM", () => {
  const started = (running: VirtualMachineInstance) => {
    const o = observe({ vmi: running });
    return { status: decideSnapshot(o).status, content: contentOf(o) };
  };

  it("with a guest agent: Online and GuestAgent, frozen for the deadline's rest before any copy starts", () => {
    const { status, content } = started(vmi(true));
    expect(status.indications).toEqual(["Online", "GuestAgent"]);
    expect(status.sourceIndications?.map((i) => i.indication)).toEqual(["Online", "GuestAgent"]);
    const d = decideSnapshot(observe({ vmi: vmi(true), content, snapshot: snapshot({ status }) }));
    expect(d.actions).toEqual([{ kind: "quiesce", how: "freeze", unfreezeTimeout: "240s" }]);
    const frozen = decideSnapshot(
      observe({ vmi: vmi(true, { fsFreezeStatus: "frozen" }), content, snapshot: snapshot({ status }) }),
    );
    expect(frozen.actions.flatMap((a) => (a.kind === "createCopyPod" ? [a.inUse] : []))).toEqual([true, true]);
  });

  it("thaws the guest once every copy is in", () => {
    const { status, content } = started(vmi(true));
    const allCopied = {
      ...content,
      status: {
        volumeSnapshotStatus: ["root", "data"].map((v) => ({ volumeSnapshotName: copyName(v), readyToUse: true })),
      },
    };
    const d = decideSnapshot(
      observe({ vmi: vmi(true, { fsFreezeStatus: "frozen" }), content: allCopied, snapshot: snapshot({ status }) }),
    );
    expect(kinds(d.actions)).toEqual(["writeContentStatus", "markVm", "release"]);
    expect(d.actions[2]).toEqual({ kind: "release", how: "freeze" });
  });

  it("says QuiesceTimeout when the guest thawed while its disks were being copied", () => {
    const { status, content } = started(vmi(true));
    const d = decideSnapshot(
      observe({
        vmi: vmi(true),
        content,
        snapshot: snapshot({ status }),
        claim: (n) => claim(n),
        copyPod: () => pod("Running"),
      }),
    );
    expect(d.status.indications).toEqual(["Online", "GuestAgent", "QuiesceTimeout"]);
    expect(kinds(d.actions)).not.toContain("quiesce");
  });

  it("without a guest agent: Online and NoGuestAgent, paused for the copy", () => {
    const { status } = started(vmi(false));
    expect(status.indications).toEqual(["Online", "NoGuestAgent"]);
    expect(quiesceOf(status.indications)).toBe("pause");
  });

  it("paused already: Paused too, and neither paused nor resumed by the snapshot", () => {
    const { status } = started(vmi(false, { conditions: [{ type: "Paused", status: "True" }] }));
    expect(status.indications).toEqual(["Online", "NoGuestAgent", "Paused"]);
    expect(quiesceOf(status.indications)).toBe("none");
    // Its QEMU holds the disks all the same: the copy reads them as in use (qemu-img -U).
    expect(sourceInUse(status.indications)).toBe(true);
    const o = observe({ vmi: vmi(false, { conditions: [{ type: "Paused", status: "True" }] }) });
    const d = decideSnapshot(
      observe({ vmi: o.vmi, content: contentOf(o), snapshot: snapshot({ status }), claim: (n) => claim(n) }),
    );
    expect(kinds(d.actions)).not.toContain("quiesce");
    expect(d.actions.flatMap((a) => (a.kind === "createCopyPod" ? [a.inUse] : []))).toEqual([true, true]);
  });
});

describe("a snapshot that cannot go on", () => {
  it("fails at its failure deadline, and lets go of the guest and the VM", () => {
    const { status, content } = (() => {
      const o = observe({ vmi: vmi(true) });
      return { status: decideSnapshot(o).status, content: contentOf(o) };
    })();
    const late = new Date("2026-01-01T00:05:01Z");
    const d = decideSnapshot(
      observe({
        vmi: vmi(true, { fsFreezeStatus: "frozen" }),
        content,
        snapshot: snapshot({ status }),
        copyPod: () => pod("Running"),
        now: late,
      }),
    );
    expect(kinds(d.actions)).toEqual(["markVm", "release", "deleteCopyPod", "deleteCopyPod"]);
    expect(d.status).toMatchObject({ phase: "Failed", readyToUse: false });
    expect(d.status.error?.message).toContain("failureDeadline (5m)");
  });

  it("says why a copy failed while the kubelet runs it again", () => {
    const o = observe();
    const failing: Pod = {
      ...pod("Running"),
      status: {
        phase: "Running",
        containerStatuses: [
          {
            name: "importer",
            image: "importer",
            imageID: "",
            ready: false,
            restartCount: 1,
            state: { waiting: { reason: "CrashLoopBackOff" } },
            lastState: { terminated: { exitCode: 1, message: "the source claim holds no disk.img" } },
          },
        ],
      },
    };
    const d = decideSnapshot(
      observe({
        content: contentOf(o),
        snapshot: snapshot({ status: decideSnapshot(o).status }),
        claim: (n) => claim(n),
        copyPod: (t) => (t === copyName("root") ? failing : pod("Running")),
      }),
    );
    expect(d.status.conditions?.find((c) => c.type === "Progressing")).toMatchObject({
      status: "False",
      message: "the copy of volume root failed, and is tried again: the source claim holds no disk.img",
    });
    expect(d.status.phase).toBe("InProgress");
  });

  it("takes no deadline when failureDeadline is 0s", () => {
    const o = observe({
      snapshot: snapshot({ spec: { ...snapshot().spec, failureDeadline: "0s" } }),
      now: new Date("2027-01-01T00:00:00Z"),
    });
    expect(decideSnapshot(o).status.phase).toBe("InProgress");
  });

  it("waits while another snapshot of the VM is under way, or the VM does not exist", () => {
    expect(decideSnapshot(observe({ vm: vm({ snapshotInProgress: "other" }) })).status.conditions?.[0]?.message).toBe(
      "snapshot other of the VM is under way; this one waits for it",
    );
    expect(decideSnapshot(observe({ vm: undefined })).status.conditions?.[0]?.message).toBe(
      "the source VirtualMachine vm does not exist",
    );
  });

  it("fails where the controller has no importer to copy with", () => {
    expect(decideSnapshot(observe({ copier: false })).status.phase).toBe("Failed");
  });

  it("when deleted in progress, says Deleting as it lets go of the guest and the VM, then of its finalizer", () => {
    const o = observe({ vmi: vmi(true) });
    const status = decideSnapshot(o).status;
    const deleted = (s: typeof status) =>
      snapshot({ status: s, metadata: { ...snapshot().metadata, deletionTimestamp: "2026-01-01T00:00:30Z" } });
    const frozen = vmi(true, { fsFreezeStatus: "frozen" });
    const d = decideSnapshot(observe({ vmi: frozen, content: contentOf(o), snapshot: deleted(status) }));
    expect(kinds(d.actions)).toEqual(["markVm", "release"]);
    expect(d.status).toMatchObject({ phase: "Deleting", readyToUse: false });
    expect(d.status.conditions?.map((c) => [c.type, c.status, c.message])).toEqual([
      ["Progressing", "False", "VM snapshot is deleting"],
      ["Ready", "False", "VM snapshot is deleting"],
    ]);
    // Once Deleting is written, every let-go step had succeeded: the guest is not released again (the user may have
    // paused it since), and the finalizer goes.
    const next = decideSnapshot(observe({ vmi: frozen, content: contentOf(o), snapshot: deleted(d.status) }));
    expect(kinds(next.actions)).not.toContain("release");
    expect(kinds(next.actions).at(-1)).toBe("removeFinalizer");
    expect(next.status.phase).toBe("Deleting");
  });

  it("releases the guest once a quiesce may have been asked for, though the VMI does not show it yet", () => {
    const o = observe({ vmi: vmi(true) });
    const status = decideSnapshot(o).status;
    const content = contentOf(o);
    const deleted = snapshot({
      status,
      metadata: { ...snapshot().metadata, deletionTimestamp: "2026-01-01T00:00:30Z" },
    });
    // The VMI is not frozen yet (or no longer there): the release goes all the same.
    for (const seen of [vmi(true), undefined])
      expect(kinds(decideSnapshot(observe({ vmi: seen, content, snapshot: deleted })).actions)).toEqual([
        "markVm",
        "release",
      ]);
    const late = decideSnapshot(
      observe({ vmi: vmi(true), content, snapshot: snapshot({ status }), now: new Date("2026-01-01T00:05:01Z") }),
    );
    expect(late.status.phase).toBe("Failed");
    expect(kinds(late.actions)).toContain("release");
    // A finished snapshot released the guest already: it does not again (the user may have paused it since).
    const finished = snapshot({ status: { ...status, phase: "Succeeded" } });
    expect(kinds(decideSnapshot(observe({ vmi: vmi(true), content, snapshot: finished })).actions)).not.toContain(
      "release",
    );
  });

  it("sends the release again when it failed on the way to success or failure", () => {
    const o = observe({ vmi: vmi(true) });
    const status = decideSnapshot(o).status;
    const content = contentOf(o, {
      volumeSnapshotStatus: ["root", "data"].map((v) => ({ volumeSnapshotName: copyName(v), readyToUse: true })),
    });
    const copying = snapshot({ status });
    const done = decideSnapshot(observe({ vmi: vmi(true, { fsFreezeStatus: "frozen" }), content, snapshot: copying }));
    expect(done.status.phase).toBe("Succeeded");
    const release = done.actions.find((a) => a.kind === "release");
    if (!release) throw new Error("no release");
    // virt-api answers 503: the snapshot keeps its phase, says why, and the next pass releases the guest again.
    const after = failedStepStatus(copying, release, new Error("503 Service Unavailable"), new Date(0));
    expect(after.phase).toBe("InProgress");
    expect(after.error?.message).toBe("release failed: 503 Service Unavailable");
    const again = decideSnapshot(observe({ vmi: vmi(true), content, snapshot: snapshot({ status: after }) }));
    expect(kinds(again.actions)).toContain("release");
    expect(again.status.error).toBeUndefined();
  });

  it("fails on a content in its place that is another snapshot's, and touches nothing it names", () => {
    const o = observe({ vmi: vmi(true) });
    const status = decideSnapshot(o).status;
    const content = contentOf(o);
    const foreign = {
      ...content,
      metadata: { ...content.metadata, ownerReferences: [{ ...controllerRef(snapshot()), uid: "other" }] },
    };
    const d = decideSnapshot(
      observe({ vmi: vmi(true), content: foreign, snapshot: snapshot({ status }), copyPod: () => pod("Running") }),
    );
    expect(d.status.phase).toBe("Failed");
    expect(d.status.error?.message).toMatch(/^the content .* is owned by VirtualMachineSnapshot snap \(uid other\)/);
    expect(kinds(d.actions)).toEqual(["markVm"]);
    const renamed = { ...content, spec: { ...content.spec, virtualMachineSnapshotName: "other" } };
    expect(
      decideSnapshot(observe({ vmi: vmi(true), content: renamed, snapshot: snapshot({ status }) })).status.error
        ?.message,
    ).toMatch(/is of snapshot other, not of this one/);
  });
});
