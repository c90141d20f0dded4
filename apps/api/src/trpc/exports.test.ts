import type { VirtualMachineExport } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { exportLinks, exportView, newExport } from "./exports.ts";

const ready: VirtualMachineExport = {
  apiVersion: "export.kubevirt.io/v1beta1",
  kind: "VirtualMachineExport",
  metadata: { name: "export-vm-abcde", namespace: "ns", creationTimestamp: "2026-11-28T11:00:00Z" },
  spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" } },
  status: {
    phase: "Ready",
    tokenSecretRef: "export-token-export-vm-abcde",
    ttlExpirationTime: "2026-11-28T13:00:00Z",
    conditions: [{ type: "Ready", status: "True", reason: "PodReady" }],
    links: {
      internal: { cert: "", volumes: [{ name: "in", formats: [{ format: "gzip", url: "https://svc/in.gz" }] }] },
      external: {
        cert: "",
        volumes: [
          {
            name: "root",
            formats: [
              { format: "raw", url: "https://dash/x/volumes/root/disk.img" },
              { format: "gzip", url: "https://dash/x/volumes/root/disk.img.gz" },
            ],
          },
        ],
      },
    },
  },
};

describe("exportView and exportLinks", () => {
  it("lists an export with its disks, and gives each disk's link with the token in its query", () => {
    expect(exportView(ready)).toEqual({
      name: "export-vm-abcde",
      created: "2026-11-28T11:00:00Z",
      phase: "Ready",
      message: undefined,
      expires: "2026-11-28T13:00:00Z",
      external: true,
      disks: ["root"],
    });
    expect(exportLinks(ready, "t/k n")).toEqual({
      tokenReadable: true,
      disks: [
        {
          name: "root",
          gzip: "https://dash/x/volumes/root/disk.img.gz?x-kubevirt-export-token=t%2Fk%20n",
          raw: "https://dash/x/volumes/root/disk.img?x-kubevirt-export-token=t%2Fk%20n",
        },
      ],
    });
  });

  it("gives no link without the token, and says why an export waits", () => {
    expect(exportLinks(ready, undefined)).toEqual({
      tokenReadable: false,
      disks: [{ name: "root", gzip: undefined, raw: undefined }],
    });
    const waiting = {
      ...ready,
      status: {
        phase: "Pending" as const,
        conditions: [
          { type: "Ready", status: "False" as const, reason: "InUse", message: "Virtual Machine ns/vm is running" },
        ],
      },
    };
    expect(exportView(waiting)).toMatchObject({
      phase: "Pending",
      message: "Virtual Machine ns/vm is running",
      disks: [],
    });
  });
});

describe("newExport", () => {
  it("exports the VM for KubeVirt's two hours, named after it", () => {
    expect(newExport("ns", "vm")).toMatchObject({
      metadata: { generateName: "export-vm-", namespace: "ns" },
      spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" }, ttlDuration: "2h" },
    });
  });
});
