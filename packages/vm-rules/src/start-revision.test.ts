import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import {
  pendingChanges,
  startRevisionFor,
  startRevisionName,
  startRevisionOf,
  templateChanged,
} from "./start-revision.ts";

const vm = (spec: Partial<VirtualMachine["spec"]> = {}): VirtualMachine => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "vm", namespace: "ns", uid: "u1", generation: 4 },
  spec: {
    runStrategy: "Always",
    template: { metadata: { labels: { a: "1" } }, spec: { domain: { devices: {}, cpu: { cores: 1 } } } },
    ...spec,
  },
});
const vmi = (annotations?: Record<string, string>): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "vm", namespace: "ns", ...(annotations ? { annotations } : {}) },
  spec: { domain: { devices: {} } },
});

describe("the start revision", () => {
  it("is named as KubeVirt names it, holds the VM's spec and generation, and is owned by the VM", () => {
    expect(startRevisionName("u1", 4)).toBe("revision-start-vm-u1-4");
    const revision = startRevisionFor(vm());
    expect(revision).toMatchObject({
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: { name: "revision-start-vm-u1-4", namespace: "ns", labels: { "kubevirt.io/created-by": "u1" } },
      data: { spec: vm().spec },
      revision: 4,
    });
    expect((revision.metadata as { ownerReferences: unknown[] }).ownerReferences).toEqual([
      expect.objectContaining({ kind: "VirtualMachine", name: "vm", uid: "u1", controller: true }),
    ]);
  });

  it("is labelled with the VM's uid, so a VM whose name is longer than a label's value still starts", () => {
    const long = vm();
    long.metadata.name = "n".repeat(200);
    const labels = startRevisionFor(long).metadata.labels ?? {};
    expect(labels).toEqual({ "kubevirt.io/created-by": "u1" });
    expect(Object.values(labels).every((v) => v.length <= 63)).toBe(true);
  });

  it("is found from the VMI's kubevirt.io/vm-generation, and not for a VMI without one or with a bad one", () => {
    expect(startRevisionOf(vm(), vmi({ "kubevirt.io/vm-generation": "2" }))).toBe("revision-start-vm-u1-2");
    expect(startRevisionOf(vm(), vmi())).toBeUndefined();
    expect(startRevisionOf(vm(), vmi({ "kubevirt.io/vm-generation": "two" }))).toBeUndefined();
    expect(startRevisionOf(vm(), vmi({ "kubevirt.io/vm-generation": "-1" }))).toBeUndefined();
  });
});

describe("a change that needs a restart", () => {
  const start = vm().spec;

  it("is none when only the run strategy or the template's labels changed, or keys are in another order", () => {
    expect(templateChanged(start, vm({ runStrategy: "Halted" }))).toBe(false);
    expect(
      templateChanged(start, vm({ template: { metadata: { labels: { a: "2" } }, spec: start.template.spec } })),
    ).toBe(false);
    expect(templateChanged(start, vm({ template: { spec: { domain: { cpu: { cores: 1 }, devices: {} } } } }))).toBe(
      false,
    );
  });

  it("is any change to the template's spec, or to the instancetype or preference named", () => {
    expect(templateChanged(start, vm({ template: { spec: { domain: { devices: {}, cpu: { cores: 2 } } } } }))).toBe(
      true,
    );
    expect(templateChanged(start, vm({ instancetype: { name: "u1.small" } }))).toBe(true);
    const sized = vm({ instancetype: { name: "u1.small", kind: "VirtualMachineClusterInstancetype" } }).spec;
    expect(
      templateChanged(sized, vm({ instancetype: { name: "u1.small", kind: "virtualmachineclusterinstancetype" } })),
    ).toBe(false);
    expect(templateChanged(sized, vm({ instancetype: { name: "u1.medium" } }))).toBe(true);
    expect(templateChanged(start, vm({ preference: { name: "debian" } }))).toBe(true);
  });
});

describe("the changes a restart would bring", () => {
  const start = vm().spec;

  it("names each changed field with its value then and now; an added one has no before, a removed one no after", () => {
    const now = vm({
      instancetype: { name: "u1.small" },
      template: {
        spec: {
          domain: { devices: { disks: [{ name: "root", disk: { bus: "sata" } }] } },
          nodeSelector: { zone: "a" },
        },
      },
    });
    expect(pendingChanges(start, now)).toEqual([
      { path: "spec.template.spec.domain.cpu", before: '{"cores":1}' },
      { path: "spec.template.spec.domain.devices.disks", after: '[{"name":"root","disk":{"bus":"sata"}}]' },
      { path: "spec.template.spec.nodeSelector", after: '{"zone":"a"}' },
      { path: "spec.instancetype", after: '{"name":"u1.small"}' },
    ]);
  });

  it("goes into lists by place, and says nothing of what did not change", () => {
    const disks = (bus: "virtio" | "sata") => [
      { name: "root", disk: { bus: "virtio" as const } },
      { name: "data", disk: { bus } },
    ];
    const withDisks = (bus: "virtio" | "sata") =>
      vm({ template: { spec: { domain: { cpu: { cores: 1 }, devices: { disks: disks(bus) } } } } });
    expect(pendingChanges(withDisks("virtio").spec, withDisks("sata"))).toEqual([
      { path: "spec.template.spec.domain.devices.disks[1].disk.bus", before: '"virtio"', after: '"sata"' },
    ]);
    expect(pendingChanges(start, vm())).toEqual([]);
  });

  it("lists at most 20, each value cut to 120 characters, however large the spec", () => {
    const labels = (v: string) => Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${String(i)}`, v]));
    const changes = pendingChanges(
      vm({ template: { spec: { domain: { devices: {} }, nodeSelector: labels("a".repeat(500)) } } }).spec,
      vm({ template: { spec: { domain: { devices: {} }, nodeSelector: labels("b") } } }),
    );
    expect(changes).toHaveLength(20);
    expect(changes[0]?.before).toHaveLength(120);
  });
});
