import type { ClaimObject } from "@kubevirt-ts/vm-rules";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { backendStorageClaim, backendStorageClass } from "./backend-storage.ts";

const vmi = (ownedByVm: boolean): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: {
    name: "win",
    namespace: "ns",
    uid: "vmi-uid",
    ...(ownedByVm
      ? {
          ownerReferences: [
            {
              apiVersion: "kubevirt.io/v1",
              kind: "VirtualMachine",
              name: "win",
              uid: "vm-uid",
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        }
      : {}),
  },
  spec: {
    domain: {
      devices: {
        tpm: { persistent: true },
        disks: [
          { name: "scratch", disk: {} },
          { name: "cd", cdrom: {}, bootOrder: 1 },
          { name: "root", disk: {}, bootOrder: 2 },
        ],
      },
    },
    volumes: [
      { name: "scratch", persistentVolumeClaim: { claimName: "scratch" } },
      { name: "cd", dataVolume: { name: "iso" } },
      { name: "root", dataVolume: { name: "root" } },
    ],
  },
});
const claim = (storageClassName: string, volumeMode = "Filesystem"): ClaimObject => ({
  metadata: {},
  spec: { storageClassName, volumeMode },
});

describe("backendStorageClass", () => {
  it("is the class the cluster names for VM state, above all", () => {
    expect(backendStorageClass(vmi(true), new Map([["root", claim("fast")]]), "state")).toBe("state");
  });

  it("is else the class of the claim the VMI boots from: the first disk by boot order, CD-ROMs passed over", () => {
    expect(
      backendStorageClass(
        vmi(true),
        new Map([
          ["root", claim("fast")],
          ["iso", claim("slow")],
          ["scratch", claim("other")],
        ]),
        undefined,
      ),
    ).toBe("fast");
  });

  it("is the cluster's default when that claim is in Block mode or there is no claim", () => {
    expect(
      backendStorageClass(vmi(true), new Map([["root", claim("local-block", "Block")]]), undefined),
    ).toBeUndefined();
    const bare = vmi(true);
    bare.spec.volumes = [];
    bare.spec.domain.devices.disks = [];
    expect(backendStorageClass(bare, new Map(), undefined)).toBeUndefined();
  });
});

describe("backendStorageClaim", () => {
  it(
    "is KubeVirt's persistent-state-for-<name>, 10Mi in Filesystem mode, owned " +
      "by the VM so that it outlives the VMI",
    () => {
      expect(backendStorageClaim(vmi(true), "fast")).toEqual({
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: {
          name: "persistent-state-for-win",
          namespace: "ns",
          ownerReferences: [
            {
              apiVersion: "kubevirt.io/v1",
              kind: "VirtualMachine",
              name: "win",
              uid: "vm-uid",
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          accessModes: ["ReadWriteOnce"],
          volumeMode: "Filesystem",
          resources: { requests: { storage: "10Mi" } },
          storageClassName: "fast",
        },
      });
    },
  );

  it("is owned by a VMI that no VM owns, and goes with it", () => {
    const made = backendStorageClaim(vmi(false), undefined);
    expect(made.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "VirtualMachineInstance", name: "win", uid: "vmi-uid", controller: true }),
    ]);
    expect(made.spec).not.toHaveProperty("storageClassName");
  });
});
