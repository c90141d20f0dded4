import type { VirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { vmiForVm } from "./controller.ts";

const vm: VirtualMachine = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "web", namespace: "ns", uid: "vm-uid" },
  spec: {
    runStrategy: "Always",
    template: {
      metadata: { labels: { app: "web", tier: "front" } },
      spec: { domain: { devices: {} }, volumes: [{ name: "root", containerDisk: { image: "guest:1" } }] },
    },
  },
};

describe("vmiForVm", () => {
  it("gives the VMI the template's labels, with the VM's name label, owned by the VM", () => {
    const vmi = vmiForVm(vm, { spec: vm.spec.template.spec, annotations: undefined });
    expect(vmi.metadata).toMatchObject({
      name: "web",
      namespace: "ns",
      labels: { app: "web", tier: "front", "vm.kubevirt.io/name": "web" },
    });
    expect(vmi.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "VirtualMachine", name: "web", uid: "vm-uid", controller: true }),
    ]);
    expect(vmi.spec.startStrategy).toBeUndefined();
    expect(vmiForVm(vm, { spec: vm.spec.template.spec, annotations: undefined }, true).spec.startStrategy).toBe(
      "Paused",
    );
  });
});
