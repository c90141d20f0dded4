import { type VirtualMachine, validateVirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { pendingChanges } from "@kubevirt-ts/vm-rules";
import { describe, expect, it } from "vitest";
import { applyEdit, changeLabels, describeChange, editCausesByField, editFormOf, parseLabelChange } from "./vm-edit";

const vm = (): VirtualMachine => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: {
    name: "web",
    namespace: "ns",
    resourceVersion: "41",
    labels: { app: "web" },
    annotations: { note: "first", "kubectl.kubernetes.io/last-applied-configuration": "{...}" },
  },
  spec: {
    running: true,
    template: {
      spec: {
        domain: {
          cpu: { cores: 1, sockets: 1 },
          memory: { guest: "128Mi" },
          devices: {
            disks: [
              { name: "root", disk: { bus: "virtio" } },
              { name: "iso", cdrom: { bus: "sata" } },
            ],
            interfaces: [{ name: "default", masquerade: {} }],
          },
        },
        networks: [{ name: "default", pod: {} }],
        volumes: [
          { name: "root", containerDisk: { image: "guest" } },
          { name: "iso", persistentVolumeClaim: { claimName: "iso" } },
        ],
        tolerations: [{ key: "maintenance", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 }],
      },
    },
  },
});

describe("the edit form", () => {
  it("reads the VM: its size, run strategy, disks, interfaces, labels, annotations and tolerations", () => {
    expect(editFormOf(vm())).toEqual({
      size: "",
      preference: "",
      cpu: "1",
      memory: "128Mi",
      runStrategy: "Always",
      disks: [
        { name: "root", kind: "disk", bus: "virtio" },
        { name: "iso", kind: "cdrom", bus: "sata" },
      ],
      interfaces: [{ name: "default", binding: "masquerade", model: "" }],
      labels: "app=web",
      annotations: "note=first",
      nodeSelector: "",
      tolerations: "maintenance:NoExecute",
    });
  });

  it("writes each field back, keeps what it does not show, and what it shows unchanged stays as it was", () => {
    const form = {
      ...editFormOf(vm()),
      cpu: "2",
      memory: "256Mi",
      runStrategy: "Halted",
      disks: [
        { name: "root", kind: "disk" as const, bus: "sata" },
        { name: "iso", kind: "cdrom" as const, bus: "sata" },
      ],
      interfaces: [{ name: "default", binding: "masquerade", model: "e1000" }],
      labels: "app=web\ntier = front",
      annotations: "",
      nodeSelector: "kubernetes.io/hostname=node-2",
      tolerations: "maintenance:NoExecute\ngpu=yes:NoSchedule\n*",
    };
    const { vm: edited, problems } = applyEdit(vm(), form);
    expect(problems).toEqual({});
    expect(edited.metadata).toMatchObject({ resourceVersion: "41", labels: { app: "web", tier: "front" } });
    // The annotation kubectl apply keeps is not in the form, and stays.
    expect(edited.metadata.annotations).toEqual({ "kubectl.kubernetes.io/last-applied-configuration": "{...}" });
    expect(edited.spec.runStrategy).toBe("Halted");
    expect(edited.spec.running).toBeUndefined();
    const spec = edited.spec.template.spec;
    expect(spec.domain.cpu).toEqual({ cores: 2, sockets: 1 });
    expect(spec.domain.memory).toEqual({ guest: "256Mi" });
    expect(spec.domain.devices.disks?.[0]).toEqual({ name: "root", disk: { bus: "sata" } });
    expect(spec.domain.devices.interfaces?.[0]).toEqual({ name: "default", masquerade: {}, model: "e1000" });
    expect(spec.nodeSelector).toEqual({ "kubernetes.io/hostname": "node-2" });
    expect(spec.tolerations).toEqual([
      // Unchanged, with the seconds the form does not show.
      { key: "maintenance", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
      { key: "gpu", operator: "Equal", value: "yes", effect: "NoSchedule" },
      { operator: "Exists" },
    ]);
    expect(spec.volumes).toEqual(vm().spec.template.spec.volumes);
    expect(validateVirtualMachine(edited).ok).toBe(true);
    // The VM it was made from is not touched.
    expect(vm().spec.template.spec.domain.memory).toEqual({ guest: "128Mi" });
  });

  it("writes only what changed: labels alone leave the template as stored, so a running VM needs no restart", () => {
    const bare = vm();
    delete bare.spec.template.spec.domain.cpu;
    const { vm: edited, problems } = applyEdit(bare, { ...editFormOf(bare), labels: "app=api" });
    expect(problems).toEqual({});
    expect(edited.metadata.labels).toEqual({ app: "api" });
    expect(edited.spec).toEqual(bare.spec);
    expect(pendingChanges(bare.spec, edited)).toEqual([]);
  });

  it("sizes by an instancetype instead of CPU and memory, and back", () => {
    const { vm: sized } = applyEdit(vm(), { ...editFormOf(vm()), size: "u1.small", preference: "debian" });
    expect(sized.spec.instancetype).toEqual({ name: "u1.small", kind: "VirtualMachineClusterInstancetype" });
    expect(sized.spec.preference).toEqual({ name: "debian", kind: "VirtualMachineClusterPreference" });
    expect(sized.spec.template.spec.domain.cpu).toBeUndefined();
    expect(sized.spec.template.spec.domain.memory).toBeUndefined();
    const { vm: custom } = applyEdit(sized, { ...editFormOf(sized), size: "", preference: "", memory: "1Gi" });
    expect(custom.spec.instancetype).toBeUndefined();
    expect(custom.spec.preference).toBeUndefined();
    expect(custom.spec.template.spec.domain.memory).toEqual({ guest: "1Gi" });
  });

  it("names the line and what to write for each bad one, by field", () => {
    const { problems } = applyEdit(vm(), {
      ...editFormOf(vm()),
      labels: "app=web\nno-equals\napp=again\nbad key=1\nlong=" + "x".repeat(64),
      nodeSelector: "zone=a b",
      tolerations: "gpu=yes:Sometimes\n=x",
    });
    expect(problems.labels).toEqual([
      "Labels, line 2: write key=value",
      'Labels, line 3: "app" is given twice',
      `Labels, line 4: "bad key" is not a valid key (letters, digits, '-', '_', '.', an optional prefix/)`,
      `Labels, line 5: the value of "long" must be at most 63 letters, digits, '-', '_' or '.'`,
    ]);
    expect(problems.nodeSelector).toEqual([
      `Node selector, line 1: the value of "zone" must be at most 63 letters, digits, '-', '_' or '.'`,
    ]);
    expect(problems.tolerations).toEqual([
      "Tolerations, line 1: the effect must be one of NoSchedule, PreferNoSchedule, NoExecute",
      'Tolerations, line 2: "" is not a valid taint key; write key=value:Effect, key:Effect, key or *',
    ]);
    expect(applyEdit(vm(), { ...editFormOf(vm()), annotations: "a=1\n".repeat(101) }).problems.annotations).toContain(
      "Annotations: at most 100 lines",
    );
  });

  it("finds a memory the server's rules refuse, under the Memory field", () => {
    const { vm: edited } = applyEdit(vm(), { ...editFormOf(vm()), memory: "lots" });
    const result = validateVirtualMachine(edited);
    expect(result.ok).toBe(false);
    const byField = result.ok ? {} : editCausesByField(result.causes);
    expect(byField.memory?.[0]?.message).toMatch(/^Memory /);
  });

  it("puts the API's causes under the fields, in words", () => {
    expect(
      editCausesByField([
        { field: "spec.template.spec.domain.memory.guest", message: "spec.template.spec.domain.memory.guest is bad" },
        { field: "spec.template.spec.domain.devices.disks[1].cdrom.bus", message: "a CD-ROM cannot use virtio" },
        { field: "metadata.uid", message: "metadata.uid is immutable" },
      ]),
    ).toEqual({
      memory: [{ message: "Memory is bad", path: "spec.template.spec.domain.memory.guest" }],
      disks: [{ message: "a CD-ROM cannot use virtio", path: "spec.template.spec.domain.devices.disks[1].cdrom.bus" }],
      "": [{ message: "metadata.uid is immutable", path: "metadata.uid" }],
    });
  });
});

describe("a change waiting for a restart, in words", () => {
  it("says what it concerns and the field within the template", () => {
    expect(describeChange({ path: "spec.template.spec.domain.memory.guest", before: '"1"', after: '"2"' })).toEqual({
      what: "Memory",
      field: "domain.memory.guest",
    });
    expect(describeChange({ path: "spec.instancetype", after: "{}" })).toEqual({
      what: "Instancetype",
      field: "spec.instancetype",
    });
    expect(describeChange({ path: "spec.template.spec.hostname", after: '"h"' }).what).toBe("The template");
  });
});

describe("a change to the labels of several VMs", () => {
  it("sets and removes labels, keeping the others", () => {
    const change = parseLabelChange("team=blue\ntier = back\n", " app \n");
    expect(change).toEqual({ set: { team: "blue", tier: "back" }, remove: ["app"], problems: [] });
    expect(changeLabels({ app: "web", tier: "front", keep: "1" }, change)).toEqual({
      team: "blue",
      tier: "back",
      keep: "1",
    });
    expect(changeLabels(undefined, change)).toEqual({ team: "blue", tier: "back" });
  });

  it("names what is wrong with each line", () => {
    expect(parseLabelChange("team\nx=ok", "bad key\nx").problems).toEqual([
      "Labels to set, line 1: write key=value",
      'Labels to remove: "bad key" is not a valid key',
      '"x" is both set and removed',
    ]);
  });
});
