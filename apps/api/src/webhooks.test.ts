import { describe, expect, it } from "vitest";
import { type AdmissionReview, mutate, validate } from "./webhooks.ts";

const vm = (spec: Record<string, unknown>) => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "demo", namespace: "ns" },
  spec: {
    runStrategy: "Halted",
    template: { spec: { domain: { memory: { guest: "128Mi" }, devices: { disks: [{ name: "root", disk: {} }] } }, volumes: [{ name: "root", containerDisk: { image: "x" } }], ...spec } },
  },
});
const review = (operation: string, object: unknown, oldObject?: unknown): AdmissionReview => ({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { uid: "u-1", operation, object, oldObject } });

describe("the validating webhook", () => {
  it("admits a valid VM", () => {
    expect(validate(review("CREATE", vm({})), "virtualmachines").response).toEqual({ uid: "u-1", allowed: true });
  });

  it("refuses an invalid VM with a 422 whose causes name each field", () => {
    const response = validate(review("CREATE", vm({ volumes: [] })), "virtualmachines").response;
    expect(response?.allowed).toBe(false);
    expect(response?.status?.code).toBe(422);
    expect(response?.status?.details.causes).toEqual([
      { type: "FieldValueNotFound", field: "spec.template.spec.domain.devices.disks[0].name", message: expect.stringMatching(/^spec\.template\.spec\.domain\.devices\.disks\[0\]\.name/) as unknown },
    ]);
    expect(response?.status?.message).toContain("disks[0].name");
  });

  it("lets a change of metadata alone through, so an old invalid object can still be cleaned up", () => {
    const old = vm({ volumes: [] });
    const updated = { ...old, metadata: { ...old.metadata, finalizers: [] } };
    expect(validate(review("UPDATE", updated, old), "virtualmachines").response?.allowed).toBe(true);
  });
});

describe("the mutating webhook", () => {
  it("fills in KubeVirt's defaults as one JSON patch of the template's spec", () => {
    const response = mutate(review("CREATE", vm({})), "virtualmachines").response;
    expect(response?.patchType).toBe("JSONPatch");
    const [op] = JSON.parse(Buffer.from(response?.patch ?? "", "base64").toString()) as [{ op: string; path: string; value: { domain: { devices: { disks: { disk: { bus: string } }[] } } } }];
    expect(op.op).toBe("replace");
    expect(op.path).toBe("/spec/template/spec");
    expect(op.value.domain.devices.disks[0]?.disk.bus).toBe("sata");
  });

  it("leaves an invalid object alone for the validating webhook to refuse", () => {
    expect(mutate(review("CREATE", vm({ volumes: [] })), "virtualmachines").response).toEqual({ uid: "u-1", allowed: true });
  });
});
