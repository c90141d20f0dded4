import {
  VOLUME_COPY_KIND_ANNOTATION,
  type VirtualMachine,
  type VirtualMachineRestore,
  type VirtualMachineSnapshotContent,
  volumeCopyName,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import {
  LAST_RESTORE_ANNOTATION,
  type SnapshotVm,
  applyJsonPatches,
  deletedDataVolumes,
  restoreDataVolume,
  restoredClaimName,
  restoredVm,
  targetReadiness,
  unsupported,
  volumeRestores,
} from "./decide.ts";

const now = new Date("2026-01-01T00:10:00Z");

function restoreOf(spec: Partial<VirtualMachineRestore["spec"]> = {}, target = "vm"): VirtualMachineRestore {
  return {
    apiVersion: "snapshot.kubevirt.io/v1beta1",
    kind: "VirtualMachineRestore",
    metadata: { name: "r1", namespace: "ns", uid: "ruid", creationTimestamp: "2026-01-01T00:08:00Z" },
    spec: {
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: target },
      virtualMachineSnapshotName: "s1",
      ...spec,
    },
  };
}

const snapshotVm: SnapshotVm = {
  metadata: { name: "vm", namespace: "ns", uid: "vmuid", labels: { app: "db" } },
  spec: {
    runStrategy: "Always",
    dataVolumeTemplates: [
      {
        metadata: { name: "vm-root" },
        spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
      },
    ],
    template: {
      spec: {
        domain: {
          devices: {
            disks: [{ name: "root" }, { name: "data" }, { name: "scratch" }],
            interfaces: [{ name: "default", masquerade: {}, macAddress: "02:00:00:00:00:01" }],
          },
          firmware: { uuid: "6f1a2b3c-4d5e-5f60-8a7b-9c0d1e2f3a4b" },
          memory: { guest: "256Mi" },
        },
        networks: [{ name: "default", pod: {} }],
        volumes: [
          { name: "root", dataVolume: { name: "vm-root" } },
          { name: "data", persistentVolumeClaim: { claimName: "data-claim" } },
          { name: "scratch", dataVolume: { name: "loose-dv" } },
        ],
      },
    },
  },
};

const content: VirtualMachineSnapshotContent = {
  apiVersion: "snapshot.kubevirt.io/v1beta1",
  kind: "VirtualMachineSnapshotContent",
  metadata: { name: "c", namespace: "ns", annotations: { [VOLUME_COPY_KIND_ANNOTATION]: "PersistentVolumeClaim" } },
  spec: {
    source: { virtualMachine: snapshotVm },
    volumeBackups: ["root", "data", "scratch"].map((v) => ({
      volumeName: v,
      persistentVolumeClaim: {
        metadata: { name: `${v}-claim` },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: "local-path",
          resources: { requests: { storage: "2Gi" } },
        },
      },
      volumeSnapshotName: volumeCopyName("suid", v),
    })),
  },
};

function withRestores(restore: VirtualMachineRestore): VirtualMachineRestore {
  const restores = volumeRestores(restore, content);
  if (typeof restores === "string") throw new Error(restores);
  return { ...restore, status: { restores } };
}

describe("restored claim names", () => {
  it("are KubeVirt's restore-<uid>-<volume> by default", () => {
    expect(restoredClaimName(restoreOf(), "root")).toBe("restore-ruid-root");
  });
  it("take an override's restoreName, then PrefixTargetName", () => {
    const r = restoreOf({
      volumeRestorePolicy: "PrefixTargetName",
      volumeRestoreOverrides: [{ volumeName: "data", restoreName: "mine" }],
    });
    expect(restoredClaimName(r, "data")).toBe("mine");
    expect(restoredClaimName(r, "root")).toBe("vm-root");
  });
});

describe("what is refused, by path", () => {
  it.each([
    [{ volumeRestorePolicy: "InPlace" as const }, "spec.volumeRestorePolicy"],
    [{ volumeRestoreOverrides: [{ volumeName: "a", labels: { x: "y" } }] }, "spec.volumeRestoreOverrides[0].labels"],
    [
      { volumeRestoreOverrides: [{ volumeName: "a", restoreName: "Bad_Name" }] },
      "spec.volumeRestoreOverrides[0].restoreName",
    ],
    [{ patches: ["{not json"] }, "spec.patches[0]"],
    [{ patches: ['{"op":"jump","path":"/x"}'] }, "spec.patches[0]: op must be"],
    [{ patches: Array.from({ length: 101 }, () => '{"op":"remove","path":"/x"}') }, "spec.patches: at most 100"],
  ])("%j", (spec, path) => {
    expect(unsupported(restoreOf(spec))).toContain(path);
  });
  it("accepts what it supports", () => {
    expect(
      unsupported(
        restoreOf({
          volumeRestoreOverrides: [{ volumeName: "a", restoreName: "ok" }],
          patches: ['{"op":"remove","path":"/spec/x"}', '{"op":"add","path":"/metadata/labels/a","value":"b"}'],
        }),
      ),
    ).toBeUndefined();
  });

  it("refuses patches of more than the VM's spec, labels and annotations, as KubeVirt's admission", () => {
    expect(unsupported(restoreOf({ patches: ['{"op":"replace","path":"/metadata/name","value":"x"}'] }))).toMatch(
      /^spec\.patches\[0\]: "\/metadata\/name": only \/spec\/, \/metadata\/labels\/ and/,
    );
    expect(unsupported(restoreOf({ patches: ['{"op":"move","from":"/status","path":"/spec/x"}'] }))).toMatch(
      /^spec\.patches\[0\]: "\/status": only/,
    );
    expect(
      unsupported(
        restoreOf({ patches: ['{"op":"remove","path":"/metadata/annotations/restore.kubevirt.io~1lastRestoreUID"}'] }),
      ),
    ).toMatch(/the restore's own annotation cannot be patched/);
  });
});

describe("target readiness", () => {
  it("is ready without a VMI", () => {
    expect(targetReadiness(restoreOf(), false, now).kind).toBe("ready");
  });
  it("waits the grace period by default, then fails", () => {
    expect(targetReadiness(restoreOf(), true, now)).toMatchObject({
      kind: "wait",
    });
    expect(targetReadiness(restoreOf(), true, now)).toHaveProperty("message", expect.stringMatching(/5m0s/) as string);
    expect(targetReadiness(restoreOf(), true, new Date("2026-01-01T00:13:01Z")).kind).toBe("fail");
  });
  it.each([
    ["StopTarget", "stop"],
    ["FailImmediate", "fail"],
    ["WaitEventually", "wait"],
  ] as const)("%s: %s", (policy, kind) => {
    expect(targetReadiness(restoreOf({ targetReadinessPolicy: policy }), true, new Date("2027-01-01")).kind).toBe(kind);
  });
});

describe("volume restores", () => {
  it("name each copy and the restored claim; a templated DataVolume is restored as one", () => {
    expect(volumeRestores(restoreOf(), content)).toEqual([
      {
        volumeName: "root",
        persistentVolumeClaim: "restore-ruid-root",
        volumeSnapshotName: "vmsnapshot-suid-volume-root",
        dataVolumeName: "restore-ruid-root",
      },
      {
        volumeName: "data",
        persistentVolumeClaim: "restore-ruid-data",
        volumeSnapshotName: "vmsnapshot-suid-volume-data",
      },
      {
        volumeName: "scratch",
        persistentVolumeClaim: "restore-ruid-scratch",
        volumeSnapshotName: "vmsnapshot-suid-volume-scratch",
      },
    ]);
  });
  it("refuses a content of CSI VolumeSnapshots, naming the volume", () => {
    const csi = { ...content, metadata: { ...content.metadata, annotations: {} } };
    expect(volumeRestores(restoreOf(), csi)).toContain("volume root: its copy is the CSI VolumeSnapshot");
  });
  it("fill each claim by cloning the copy, as the source claim was, owned by the target", () => {
    const r = withRestores(restoreOf());
    const target = { ...newTarget(), metadata: { name: "vm", namespace: "ns", uid: "vmuid" } };
    const [vr, backup] = [r.status?.restores?.[1], content.spec.volumeBackups?.[1]];
    if (!vr || !backup) throw new Error("no second volume");
    const dv = restoreDataVolume(r, vr, backup, snapshotVm, target);
    expect(dv.metadata).toMatchObject({
      name: "restore-ruid-data",
      ownerReferences: [{ kind: "VirtualMachine", uid: "vmuid" }],
    });
    expect(dv.spec).toEqual({
      source: { pvc: { namespace: "ns", name: "vmsnapshot-suid-volume-data" } },
      pvc: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: "local-path",
        resources: { requests: { storage: "2Gi" } },
      },
    });
    const unowned = restoreDataVolume(
      { ...r, spec: { ...r.spec, volumeOwnershipPolicy: "None" } },
      vr,
      backup,
      snapshotVm,
      target,
    );
    expect(unowned.metadata.ownerReferences).toBeUndefined();
    // For a VM not made yet, the restore holds the claim until the VM takes it over.
    const held = restoreDataVolume(r, vr, backup, snapshotVm, undefined);
    expect(held.metadata.ownerReferences).toEqual([
      { apiVersion: "snapshot.kubevirt.io/v1beta1", kind: "VirtualMachineRestore", name: "r1", uid: "ruid" },
    ]);
  });
});

function newTarget(): VirtualMachine {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name: "vm", namespace: "ns", uid: "vmuid", annotations: { keep: "me" } },
    spec: {
      runStrategy: "Manual",
      dataVolumeTemplates: [
        {
          metadata: { name: "vm-root-later" },
          spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
        },
      ],
      template: { spec: { domain: { devices: {}, memory: { guest: "1Gi" } } } },
    },
  };
}

describe("the restored VM", () => {
  it("is the snapshot's spec on the restored claims, keeping the target's metadata and run strategy", () => {
    const r = withRestores(restoreOf());
    const vm = restoredVm(r, snapshotVm, newTarget()) as VirtualMachine;
    expect(vm.metadata.annotations).toEqual({ keep: "me", [LAST_RESTORE_ANNOTATION]: "r1-ruid" });
    expect(vm.spec.runStrategy).toBe("Manual");
    expect(vm.spec.template.spec.volumes).toEqual([
      { name: "root", dataVolume: { name: "restore-ruid-root" } },
      { name: "data", persistentVolumeClaim: { claimName: "restore-ruid-data" } },
      { name: "scratch", persistentVolumeClaim: { claimName: "restore-ruid-scratch" } },
    ]);
    expect(vm.spec.dataVolumeTemplates?.map((t) => t.metadata.name)).toEqual(["restore-ruid-root"]);
    // The same VM keeps its identity.
    expect(vm.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBe("02:00:00:00:00:01");
    expect(vm.spec.template.spec.domain.firmware?.uuid).toBe("6f1a2b3c-4d5e-5f60-8a7b-9c0d1e2f3a4b");
    expect(deletedDataVolumes(newTarget(), vm)).toEqual(["vm-root-later"]);
  });

  it("stops a legacy running VM", () => {
    const target = { ...newTarget(), spec: { ...newTarget().spec, runStrategy: undefined, running: true } };
    const vm = restoredVm(withRestores(restoreOf()), snapshotVm, target) as VirtualMachine;
    expect(vm.spec.running).toBe(false);
    expect(vm.spec.runStrategy).toBeUndefined();
  });

  it("is a new Halted VM with a new MAC and firmware UUID, its patches applied", () => {
    const r = withRestores(
      restoreOf({ patches: ['{"op":"add","path":"/metadata/labels/copy","value":"yes"}'] }, "vm-copy"),
    );
    const vm = restoredVm(r, snapshotVm, undefined) as VirtualMachine;
    expect(vm.metadata).toMatchObject({ name: "vm-copy", namespace: "ns", labels: { app: "db", copy: "yes" } });
    expect(vm.metadata.uid).toBeUndefined();
    expect(vm.spec.runStrategy).toBe("Halted");
    expect(vm.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBeUndefined();
    expect(vm.spec.template.spec.domain.firmware).toBeUndefined();
    // The snapshot's VM is left as it was.
    expect(snapshotVm.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBe("02:00:00:00:00:01");
  });

  it("keeps a MAC a patch sets, and says which patch does not apply", () => {
    const path = "/spec/template/spec/domain/devices/interfaces/0/macAddress";
    const mac = JSON.stringify({ op: "replace", path, value: "02:00:00:00:00:09" });
    const vm = restoredVm(withRestores(restoreOf({ patches: [mac] }, "copy")), snapshotVm, undefined) as VirtualMachine;
    expect(vm.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBe("02:00:00:00:00:09");
    const bad = restoredVm(
      withRestores(restoreOf({ patches: ['{"op":"remove","path":"/spec/nothing"}'] }, "copy")),
      snapshotVm,
      undefined,
    );
    expect(bad).toBe("spec.patches: patch 0: /spec/nothing: does not exist");
  });
});

describe("JSON patches (RFC 6902)", () => {
  const doc = { a: { b: [1, 2, 3] }, "x/y": 1 };
  it.each([
    [['{"op":"add","path":"/a/b/1","value":9}'], { a: { b: [1, 9, 2, 3] }, "x/y": 1 }],
    [['{"op":"add","path":"/a/b/-","value":9}'], { a: { b: [1, 2, 3, 9] }, "x/y": 1 }],
    [['{"op":"remove","path":"/a/b/0"}'], { a: { b: [2, 3] }, "x/y": 1 }],
    [['{"op":"replace","path":"/x~1y","value":2}'], { a: { b: [1, 2, 3] }, "x/y": 2 }],
    [['{"op":"move","from":"/x~1y","path":"/z"}'], { a: { b: [1, 2, 3] }, z: 1 }],
    [['{"op":"copy","from":"/a/b/2","path":"/c"}'], { a: { b: [1, 2, 3] }, "x/y": 1, c: 3 }],
    [['{"op":"test","path":"/a/b","value":[1,2,3]}'], doc],
  ])("%j", (patches, want) => {
    expect(applyJsonPatches(doc, patches)).toEqual(want);
  });
  it.each([
    ['{"op":"test","path":"/a/b","value":[1]}', "test failed"],
    ['{"op":"replace","path":"/nope","value":1}', "does not exist"],
    ['{"op":"add","path":"/a/b/7","value":1}', "no such array index"],
    ['{"op":"add","path":"/q/r","value":1}', "q does not exist"],
  ])("%s fails: %s", (patch, why) => {
    expect(applyJsonPatches(doc, [patch])).toContain(why);
  });
});

describe("JSON patches cannot reach a prototype", () => {
  it.each([
    '{"op":"add","path":"/__proto__/deletionTimestamp","value":"x"}',
    '{"op":"add","path":"/a/constructor/prototype/deletionTimestamp","value":"x"}',
    '{"op":"copy","from":"/a","path":"/__proto__"}',
    '{"op":"copy","from":"/__proto__","path":"/z"}',
  ])("%s is refused", (patch) => {
    expect(applyJsonPatches({ a: { b: 1 } }, [patch])).toMatch(/cannot be patched/);
    expect(unsupported(restoreOf({ patches: [patch] }))).toMatch(/^spec\.patches\[0\]: .*cannot be patched/);
    expect(({} as Record<string, unknown>).deletionTimestamp).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("deletionTimestamp");
  });
  it("steps only through a document's own keys", () => {
    expect(applyJsonPatches({ a: {} }, ['{"op":"replace","path":"/a/toString","value":1}'])).toContain(
      "does not exist",
    );
    expect(applyJsonPatches({ a: {} }, ['{"op":"add","path":"/a/hasOwnProperty/x","value":1}'])).toContain(
      "hasOwnProperty does not exist",
    );
  });
});

describe("the patched VM is bounded", () => {
  it("stops once copies pass the bound, saying why", () => {
    const doubling = Array.from({ length: 40 }, (_, i) => `{"op":"copy","from":"/spec","path":"/spec/m${String(i)}"}`);
    const patched = applyJsonPatches({ spec: { data: "x".repeat(1000) } }, doubling);
    expect(patched).toMatch(/^patch \d+: the patched VM would be \d+ characters, more than 1572864/);
  });
});
