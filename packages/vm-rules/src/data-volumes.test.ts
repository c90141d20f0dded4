import { describe, expect, it } from "vitest";
import {
  claimRequestBytes,
  dataVolumeError,
  dataVolumeFromTemplate,
  dataVolumeReady,
  dataVolumesState,
} from "./data-volumes.ts";

const vm = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "web", namespace: "ns", uid: "vm-uid" },
};

describe("dataVolumeFromTemplate", () => {
  it("names the DataVolume as the template, in the VM's namespace, owned by the VM and labelled with its uid", () => {
    const dv = dataVolumeFromTemplate(vm, {
      metadata: { name: "web-root", labels: { app: "web" }, annotations: { team: "web" } },
      spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
    });
    expect(dv.metadata).toEqual({
      name: "web-root",
      namespace: "ns",
      labels: { app: "web", "kubevirt.io/created-by": "vm-uid" },
      annotations: { team: "web", "cdi.kubevirt.io/allowClaimAdoption": "true" },
      ownerReferences: [
        {
          apiVersion: "kubevirt.io/v1",
          kind: "VirtualMachine",
          name: "web",
          uid: "vm-uid",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(dv.spec.source).toEqual({ blank: {} });
  });
});

describe("readiness", () => {
  it.each([
    ["Succeeded", true],
    ["WaitForFirstConsumer", true],
    ["PendingPopulation", true],
    ["ImportInProgress", false],
    ["Failed", false],
  ] as const)("a DataVolume %s is ready: %s", (phase, ready) => {
    expect(dataVolumeReady({ status: { phase } })).toBe(ready);
  });

  it("reports a failed import with its reason", () => {
    expect(
      dataVolumeError({
        status: {
          phase: "ImportInProgress",
          conditions: [
            { type: "Running", status: "False", reason: "Error", message: "Unable to connect to http data source" },
          ],
        },
      }),
    ).toBe("Unable to connect to http data source");
    expect(dataVolumeError({ status: { phase: "ImportInProgress" } })).toBeUndefined();
  });
});

describe("claimRequestBytes", () => {
  it("adds the file system's overhead to a storage request, not to a pvc request", () => {
    expect(claimRequestBytes({ storage: { resources: { requests: { storage: "1Gi" } } } })).toBe(
      Math.ceil(1024 ** 3 / 0.945),
    );
    expect(claimRequestBytes({ pvc: { resources: { requests: { storage: "1Gi" } } } })).toBe(1024 ** 3);
    expect(claimRequestBytes({ storage: {} })).toBeUndefined();
  });
});

describe("dataVolumesState", () => {
  const spec = {
    volumes: [
      { name: "root", dataVolume: { name: "root-dv" } },
      { name: "data", dataVolume: { name: "data-dv" } },
    ],
  };

  it("is undefined for a VMI that names no DataVolume", () => {
    expect(
      dataVolumesState({ volumes: [{ name: "root", persistentVolumeClaim: { claimName: "root" } }] }, new Map()),
    ).toBeUndefined();
  });

  it("says which DataVolumes are missing, failed or still filling, in that order, and ready once all are in", () => {
    const missing = dataVolumesState(spec, new Map([["root-dv", { status: { phase: "Succeeded" as const } }]]));
    expect(missing).toMatchObject({ ready: false, reason: "DataVolumeNotFound" });
    expect(missing?.message).toContain("data-dv does not exist");
    const failed = new Map([
      [
        "root-dv",
        {
          status: {
            phase: "Failed" as const,
            conditions: [{ type: "Running", status: "False" as const, reason: "Error", message: "HTTP 404" }],
          },
        },
      ],
      ["data-dv", { status: { phase: "ImportInProgress" as const, progress: "45.12%" } }],
    ]);
    expect(dataVolumesState(spec, failed)).toMatchObject({
      ready: false,
      reason: "DataVolumeError",
      message: "DataVolume root-dv: HTTP 404",
    });
    const filling = new Map([
      ["root-dv", { status: { phase: "Succeeded" as const } }],
      ["data-dv", { status: { phase: "ImportInProgress" as const, progress: "45.12%" } }],
    ]);
    expect(dataVolumesState(spec, filling)).toMatchObject({ ready: false, reason: "NotAllDVsReady" });
    expect(dataVolumesState(spec, filling)?.message).toContain("data-dv (ImportInProgress 45.12%)");
    const done = new Map([
      ["root-dv", { status: { phase: "Succeeded" as const } }],
      ["data-dv", { status: { phase: "WaitForFirstConsumer" as const } }],
    ]);
    expect(dataVolumesState(spec, done)).toMatchObject({ ready: true, reason: "AllDVsReady" });
  });
});
