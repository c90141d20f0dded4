import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { vmDisks } from "./vm-disks";

const vm: VirtualMachine = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "web", namespace: "ns" },
  spec: {
    template: {
      spec: {
        domain: {
          devices: {
            disks: [
              { name: "root", disk: { bus: "virtio" } },
              { name: "data", disk: { bus: "virtio" } },
              { name: "install", cdrom: {} },
            ],
          },
        },
        volumes: [
          { name: "root", containerDisk: { image: "kubevirt-ts.local/debian-guest:12" } },
          { name: "data", persistentVolumeClaim: { claimName: "web-data" } },
          { name: "install", persistentVolumeClaim: { claimName: "debian-iso", readOnly: true } },
        ],
      },
    },
  },
};

describe("vmDisks", () => {
  it("lists each disk with its source in words and whether it outlives a stop", () => {
    expect(vmDisks(vm, undefined)).toEqual([
      {
        name: "root",
        kind: "disk (virtio)",
        source: "image kubevirt-ts.local/debian-guest:12, reset at each start",
        persistent: false,
        device: undefined,
        claim: undefined,
        size: undefined,
      },
      {
        name: "data",
        kind: "disk (virtio)",
        source: "claim web-data",
        persistent: true,
        device: undefined,
        claim: "web-data",
        size: undefined,
      },
      {
        name: "install",
        kind: "CD-ROM (sata)",
        source: "claim debian-iso (read-only)",
        persistent: true,
        device: undefined,
        claim: "debian-iso",
        size: undefined,
      },
    ]);
  });

  it("adds the device and the claim's size the running VMI reports", () => {
    const vmi = {
      status: {
        volumeStatus: [
          {
            name: "data",
            target: "vdb",
            persistentVolumeClaimInfo: {
              claimName: "web-data",
              capacity: { storage: "2Gi" },
              requests: { storage: "2Gi" },
            },
          },
          { name: "root", target: "vda" },
        ],
      },
    } as unknown as VirtualMachineInstance;
    const rows = vmDisks(vm, vmi);
    expect(rows.find((r) => r.name === "data")).toMatchObject({ device: "vdb", claim: "web-data", size: "2Gi" });
    expect(rows.find((r) => r.name === "root")?.device).toBe("vda");
  });

  it("lists a disk on a DataVolume as persistent, on the claim of its name", () => {
    const onDataVolume: VirtualMachine = {
      ...vm,
      spec: {
        template: {
          spec: {
            domain: { devices: { disks: [{ name: "root", disk: { bus: "virtio" } }] } },
            volumes: [{ name: "root", dataVolume: { name: "web-root" } }],
          },
        },
      },
    };
    expect(vmDisks(onDataVolume, undefined)).toEqual([
      {
        name: "root",
        kind: "disk (virtio)",
        source: "DataVolume web-root",
        persistent: true,
        device: undefined,
        claim: "web-root",
        size: undefined,
      },
    ]);
  });
});
