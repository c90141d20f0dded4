import { describe, expect, it } from "vitest";
import { newVm, newVmiSpec } from "../test/builders.ts";
import { defaultVirtualMachine, defaultVmiSpec, runStrategyOf } from "./defaults.ts";
import type { VmiSpec } from "./schema/vmi.ts";

describe("runStrategyOf", () => {
  it.each([
    [{ runStrategy: "Manual" as const }, "Manual"],
    [{ running: true }, "Always"],
    [{ running: false }, "Halted"],
    [{}, "Halted"],
  ])("%j runs as %s", (spec, expected) => {
    expect(runStrategyOf(spec)).toBe(expected);
  });
});

describe("defaultVmiSpec", () => {
  const cases: [string, VmiSpec, (s: VmiSpec) => unknown, unknown][] = [
    [
      "a disk without a target becomes a disk on sata",
      newVmiSpec((s) => (s.domain.devices.disks = [{ name: "containerdisk" }])),
      (s) => s.domain.devices.disks?.[0],
      { name: "containerdisk", disk: { bus: "sata" } },
    ],
    ["a bus given is kept", newVmiSpec(), (s) => s.domain.devices.disks?.[0]?.disk?.bus, "virtio"],
    [
      "a cdrom is read-only with its tray closed",
      newVmiSpec((s) => (s.domain.devices.disks = [{ name: "containerdisk", cdrom: {} }])),
      (s) => s.domain.devices.disks?.[0]?.cdrom,
      { bus: "sata", readonly: true, tray: "closed" },
    ],
    [
      "a volume without a disk gets one",
      newVmiSpec((s) => s.volumes?.push({ name: "scratch", emptyDisk: { capacity: "1Gi" } })),
      (s) => s.domain.devices.disks?.map((d) => d.name),
      ["containerdisk", "scratch"],
    ],
    ["guest memory comes from the memory request", newVmiSpec(), (s) => s.domain.memory?.guest, "128Mi"],
    [
      "or from the memory limit",
      newVmiSpec((s) => (s.domain.resources = { limits: { memory: "1Gi" } })),
      (s) => s.domain.memory?.guest,
      "1Gi",
    ],
    [
      "an explicit guest memory wins",
      newVmiSpec((s) => (s.domain.memory = { guest: "256Mi" })),
      (s) => s.domain.memory?.guest,
      "256Mi",
    ],
    ["the cpu topology is 1×1×1 by default", newVmiSpec(), (s) => s.domain.cpu, { sockets: 1, cores: 1, threads: 1 }],
    [
      "sockets follow the cpu limit",
      newVmiSpec((s) => (s.domain.resources = { requests: { memory: "1Gi" }, limits: { cpu: "3" } })),
      (s) => s.domain.cpu,
      { sockets: 3, cores: 1, threads: 1 },
    ],
    [
      "the cpu request follows the limit",
      newVmiSpec((s) => (s.domain.resources = { requests: { memory: "1Gi" }, limits: { cpu: "2" } })),
      (s) => s.domain.resources?.requests?.cpu,
      "2",
    ],
    [
      "partial topologies are completed",
      newVmiSpec((s) => (s.domain.cpu = { cores: 4 })),
      (s) => s.domain.cpu,
      { sockets: 1, cores: 4, threads: 1 },
    ],
    ["the machine type is q35", newVmiSpec(), (s) => s.domain.machine?.type, "q35"],
    [
      "a pod network is added when none is given",
      newVmiSpec((s) => {
        delete s.networks;
        delete s.domain.devices.interfaces;
      }),
      (s) => [s.networks, s.domain.devices.interfaces],
      [[{ name: "default", pod: {} }], [{ name: "default", masquerade: {} }]],
    ],
    [
      "but not when autoattachPodInterface is false",
      newVmiSpec((s) => {
        delete s.networks;
        delete s.domain.devices.interfaces;
        s.domain.devices.autoattachPodInterface = false;
      }),
      (s) => [s.networks, s.domain.devices.interfaces],
      [undefined, undefined],
    ],
  ];

  it.each(cases)("%s", (_name, spec, select, expected) => {
    expect(select(defaultVmiSpec(spec))).toEqual(expected);
  });

  it("takes the cluster's machine type and CPU model where the VMI names none, and keeps the ones it names", () => {
    const options = {
      defaultNetworkInterface: "masquerade" as const,
      defaultDiskBus: "sata" as const,
      machineType: "pc-q35-8.2",
      cpuModel: "Haswell",
    };
    expect(defaultVmiSpec(newVmiSpec(), options).domain).toMatchObject({
      machine: { type: "pc-q35-8.2" },
      cpu: { model: "Haswell" },
    });
    const named = newVmiSpec((s) => {
      s.domain.machine = { type: "q35" };
      s.domain.cpu = { model: "host-passthrough" };
    });
    expect(defaultVmiSpec(named, options).domain).toMatchObject({
      machine: { type: "q35" },
      cpu: { model: "host-passthrough" },
    });
  });

  it("does not change its input", () => {
    const spec = newVmiSpec((s) => (s.domain.devices.disks = [{ name: "containerdisk" }]));
    const before = structuredClone(spec);
    defaultVmiSpec(spec);
    expect(spec).toEqual(before);
  });

  it("gives an EFI bootloader secure boot unless it is turned off, as KubeVirt does", () => {
    expect(
      defaultVmiSpec(newVmiSpec((s) => (s.domain.firmware = { bootloader: { efi: {} } }))).domain.firmware?.bootloader
        ?.efi,
    ).toEqual({ secureBoot: true });
    expect(
      defaultVmiSpec(newVmiSpec((s) => (s.domain.firmware = { bootloader: { efi: { secureBoot: false } } }))).domain
        .firmware?.bootloader?.efi,
    ).toEqual({ secureBoot: false });
    expect(
      defaultVmiSpec(newVmiSpec((s) => (s.domain.firmware = { bootloader: { bios: {} } }))).domain.firmware?.bootloader,
    ).toEqual({ bios: {} });
  });

  it("is idempotent", () => {
    const once = defaultVmiSpec(newVmiSpec());
    expect(defaultVmiSpec(once)).toEqual(once);
  });

  it("applies to a VM's template", () => {
    expect(defaultVirtualMachine(newVm()).spec.template.spec.domain.machine?.type).toBe("q35");
  });
});
