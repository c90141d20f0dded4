import { describe, expect, it } from "vitest";
import { Causes } from "../validation/causes.ts";
import type { VmiSpec } from "../schema/vmi.ts";
import { type ExpansionSources, expandVmiSpec, vcpuTopology } from "./expand.ts";
import { matcherKind, revisionName } from "./find.ts";

const PATH = "spec.template.spec";
const template = (spec: Partial<VmiSpec> = {}): VmiSpec => ({
  domain: { devices: {} },
  volumes: [{ name: "root", containerDisk: { image: "example/guest" } }],
  ...spec,
});
const u1medium = { name: "u1.medium", spec: { cpu: { guest: 1 }, memory: { guest: "4Gi" } } };
const debian = {
  name: "debian",
  spec: {
    devices: { preferredDiskBus: "virtio" as const, preferredInterfaceModel: "virtio" as const, preferredRng: {} },
    firmware: { preferredEfi: { secureBoot: false } },
    requirements: { cpu: { guest: 1 }, memory: { guest: "512Mi" } },
  },
};

function expand(spec: VmiSpec, sources: ExpansionSources, annotations?: Record<string, string>) {
  const causes = new Causes();
  const result = expandVmiSpec({ spec, annotations }, sources, PATH, causes);
  return { ...result, causes: causes.list };
}

describe("vcpuTopology", () => {
  it("lays vCPUs out as sockets unless the preference says otherwise, as KubeVirt's default", () => {
    expect(vcpuTopology(4, undefined)).toEqual({ sockets: 4, cores: 1, threads: 1 });
    expect(vcpuTopology(4, { cpu: { preferredCPUTopology: "cores" } })).toEqual({ sockets: 1, cores: 4, threads: 1 });
    expect(vcpuTopology(4, { cpu: { preferredCPUTopology: "preferThreads" } })).toEqual({
      sockets: 1,
      cores: 1,
      threads: 4,
    });
    expect(vcpuTopology(1, { cpu: { preferredCPUTopology: "cores" } })).toEqual({ sockets: 1, cores: 1, threads: 1 });
  });

  it("spreads by the ratio and refuses a count the ratio does not divide", () => {
    expect(vcpuTopology(8, { cpu: { preferredCPUTopology: "spread" } })).toEqual({ sockets: 4, cores: 2, threads: 1 });
    expect(
      vcpuTopology(12, {
        cpu: { preferredCPUTopology: "spread", spreadOptions: { across: "SocketsCoresThreads", ratio: 3 } },
      }),
    ).toEqual({ sockets: 2, cores: 3, threads: 2 });
    expect(
      vcpuTopology(6, { cpu: { preferredCPUTopology: "spread", spreadOptions: { across: "CoresThreads", ratio: 3 } } }),
    ).toEqual({ sockets: 1, cores: 2, threads: 3 });
    expect(vcpuTopology(3, { cpu: { preferredCPUTopology: "spread" } })).toMatch(/multiple of 2/);
  });
});

describe("expandVmiSpec", () => {
  it("leaves a template without instancetype or preference as it is", () => {
    const spec = template();
    expect(expand(spec, {}).spec).toBe(spec);
  });

  it("gives the instancetype's vCPUs and memory, and a smaller memory request when it overcommits", () => {
    const { spec, causes } = expand(template(), {
      instancetype: {
        name: "o1.large",
        spec: { cpu: { guest: 2, model: "host-model" }, memory: { guest: "8Gi", overcommitPercent: 50 } },
      },
    });
    expect(causes).toEqual([]);
    expect(spec.domain.cpu).toEqual({ sockets: 2, cores: 1, threads: 1, model: "host-model" });
    expect(spec.domain.memory?.guest).toBe("8Gi");
    expect(spec.domain.resources?.requests?.memory).toBe(String(4 * 2 ** 30));
  });

  it("refuses every template field the instancetype sets, even at the same value, by its path", () => {
    const spec = template({ nodeSelector: { a: "b" } });
    spec.domain.cpu = { sockets: 1, model: "host-model" };
    spec.domain.memory = { guest: "4Gi" };
    spec.domain.resources = { requests: { cpu: "1" }, limits: { memory: "4Gi" } };
    const { causes } = expand(
      spec,
      {
        instancetype: {
          name: "big",
          spec: {
            cpu: { guest: 1, model: "host-model" },
            memory: { guest: "4Gi" },
            nodeSelector: { c: "d" },
            annotations: { x: "1" },
          },
        },
      },
      { x: "2" },
    );
    expect(causes.map((c) => c.field)).toEqual([
      `${PATH}.domain.cpu.sockets`,
      `${PATH}.domain.cpu.model`,
      `${PATH}.domain.resources.requests.cpu`,
      `${PATH}.domain.resources.limits.memory`,
      `${PATH}.domain.memory.guest`,
      `${PATH}.nodeSelector`,
      "spec.template.metadata.annotations.x",
    ]);
    expect(causes[0]?.message).toContain("conflicts with selected instance type big");
  });

  it(
    "fills in what the template leaves unset from the preference, implicit " + "disks and the pod interface included",
    () => {
      const spec = template({ terminationGracePeriodSeconds: 5 });
      spec.domain.devices.disks = [
        { name: "data", disk: { bus: "sata" } },
        { name: "iso", cdrom: {} },
      ];
      spec.volumes = [
        ...(spec.volumes ?? []),
        { name: "data", emptyDisk: { capacity: "1Gi" } },
        { name: "iso", emptyDisk: { capacity: "1Gi" } },
      ];
      const { spec: expanded, causes } = expand(spec, {
        instancetype: u1medium,
        preference: {
          name: "p",
          spec: {
            ...debian.spec,
            devices: { ...debian.spec.devices, preferredCdromBus: "sata" },
            preferredTerminationGracePeriodSeconds: 180,
            machine: { preferredMachineType: "pc-q35-7.2" },
          },
        },
      });
      expect(causes).toEqual([]);
      expect(expanded.domain.devices.disks).toEqual([
        { name: "data", disk: { bus: "sata" } },
        { name: "iso", cdrom: { bus: "sata" } },
        { name: "root", disk: { bus: "virtio" } },
      ]);
      expect(expanded.domain.devices.interfaces).toEqual([{ name: "default", masquerade: {}, model: "virtio" }]);
      expect(expanded.domain.devices.rng).toEqual({});
      expect(expanded.domain.firmware?.bootloader).toEqual({ efi: { secureBoot: false } });
      expect(expanded.domain.machine?.type).toBe("pc-q35-7.2");
      expect(expanded.terminationGracePeriodSeconds).toBe(5);
    },
  );

  it(
    "gives a Windows preference's persistent TPM and EFI, features and clock where the " +
      "template sets none, and keeps the template's own",
    () => {
      const windows = {
        name: "windows",
        spec: {
          devices: { preferredTPM: { persistent: true } },
          firmware: { preferredEfi: { secureBoot: true, persistent: true } },
          features: {
            preferredAcpi: {},
            preferredApic: { endOfInterrupt: true },
            preferredHyperv: { relaxed: {}, vapic: {}, spinlocks: { spinlocks: 8191 } },
            preferredKvm: { hidden: true },
            preferredSmm: {},
          },
          clock: { preferredClockOffset: { utc: {} }, preferredTimer: { hpet: { present: false }, hyperv: {} } },
        },
      };
      const { spec: bare, causes } = expand(template(), { preference: windows });
      expect(causes).toEqual([]);
      expect(bare.domain.devices.tpm).toEqual({ persistent: true });
      expect(bare.domain.firmware?.bootloader).toEqual({ efi: { secureBoot: true, persistent: true } });
      expect(bare.domain.features).toEqual({
        acpi: {},
        apic: { endOfInterrupt: true },
        hyperv: { relaxed: {}, vapic: {}, spinlocks: { spinlocks: 8191 } },
        kvm: { hidden: true },
        smm: {},
      });
      expect(bare.domain.clock).toEqual({ utc: {}, timer: { hpet: { present: false }, hyperv: {} } });
      // What the template sets stays: its TPM turned off, its own APIC, its time zone; the rest comes from the
      // preference.
      const own = template();
      own.domain.devices.tpm = { enabled: false };
      own.domain.features = { apic: { enabled: false }, hyperv: { vapic: { enabled: false } } };
      own.domain.clock = { timezone: "Europe/Paris" };
      const { spec: kept } = expand(own, { preference: windows });
      expect(kept.domain.devices.tpm).toEqual({ enabled: false });
      expect(kept.domain.features?.apic).toEqual({ enabled: false });
      expect(kept.domain.features?.hyperv).toEqual({
        relaxed: {},
        vapic: { enabled: false },
        spinlocks: { spinlocks: 8191 },
      });
      expect(kept.domain.clock).toEqual({ timezone: "Europe/Paris", timer: { hpet: { present: false }, hyperv: {} } });
    },
  );

  it("keeps the template's own firmware choice over the preference's", () => {
    const spec = template();
    spec.domain.firmware = { bootloader: { bios: {} } };
    expect(expand(spec, { preference: debian }).spec.domain.firmware?.bootloader).toEqual({ bios: {} });
  });

  it("checks the preference's requirements against the instancetype, or against the template without one", () => {
    const small = { name: "u1.nano", spec: { cpu: { guest: 1 }, memory: { guest: "256Mi" } } };
    const needy = { name: "needy", spec: { requirements: { cpu: { guest: 2 }, memory: { guest: "512Mi" } } } };
    const withInstancetype = expand(template(), { instancetype: small, preference: needy }).causes;
    expect(withInstancetype.map((c) => [c.field, c.reason])).toEqual([
      ["spec.instancetype", "FieldValueNotFound"],
      ["spec.instancetype", "FieldValueNotFound"],
    ]);
    expect(withInstancetype[0]?.message).toContain("requires 2 vCPU");
    const own = template();
    own.domain.cpu = { sockets: 1 };
    own.domain.memory = { guest: "1Gi" };
    expect(expand(own, { preference: needy }).causes.map((c) => c.field)).toEqual([`${PATH}.domain.cpu.sockets`]);
  });

  it(
    "fills in the disks' cache, what is attached by default, the grace period, " +
      "architecture and subdomain from the preference",
    () => {
      const preference = {
        name: "p",
        spec: {
          devices: {
            preferredDiskCache: "writethrough" as const,
            preferredAutoattachSerialConsole: false,
            preferredAutoattachGraphicsDevice: false,
            preferredAutoattachPodInterface: false,
            preferredAutoattachMemBalloon: false,
          },
          preferredTerminationGracePeriodSeconds: 90,
          preferredArchitecture: "amd64",
          preferredSubdomain: "guests",
        },
      };
      const spec = template();
      spec.domain.devices.disks = [
        { name: "root", disk: {} },
        { name: "own", disk: {}, cache: "none" },
      ];
      const { spec: expanded, causes } = expand(spec, { preference });
      expect(causes).toEqual([]);
      expect(expanded.domain.devices.disks?.map((d) => d.cache)).toEqual(["writethrough", "none"]);
      expect(expanded.domain.devices).toMatchObject({
        autoattachSerialConsole: false,
        autoattachGraphicsDevice: false,
        autoattachPodInterface: false,
      });
      expect(expanded).toMatchObject({ terminationGracePeriodSeconds: 90, architecture: "amd64", subdomain: "guests" });
      // The template's own choices stay.
      const own = template({ terminationGracePeriodSeconds: 5, subdomain: "mine" });
      own.domain.devices.autoattachSerialConsole = true;
      const { spec: kept } = expand(own, { preference });
      expect(kept).toMatchObject({ terminationGracePeriodSeconds: 5, subdomain: "mine" });
      expect(kept.domain.devices.autoattachSerialConsole).toBe(true);
    },
  );

  it(
    "takes the deprecated preferredUseEfi and preferredUseSecureBoot, and " +
      "preferredUseBios, where the template names no bootloader",
    () => {
      const efi = expand(template(), {
        preference: { name: "old-efi", spec: { firmware: { preferredUseEfi: true, preferredUseSecureBoot: false } } },
      });
      expect(efi.spec.domain.firmware?.bootloader).toEqual({ efi: { secureBoot: false } });
      const secure = expand(template(), {
        preference: { name: "old-secure", spec: { firmware: { preferredUseEfi: true, preferredUseSecureBoot: true } } },
      });
      expect(secure.spec.domain.firmware?.bootloader).toEqual({ efi: { secureBoot: true } });
      const bios = expand(template(), { preference: { name: "bios", spec: { firmware: { preferredUseBios: true } } } });
      expect(bios.spec.domain.firmware?.bootloader).toEqual({ bios: {} });
    },
  );

  it("gives a LUN without a bus the preference's LUN bus (LUNs themselves are refused by the VMI's validation)", () => {
    const spec = template();
    spec.domain.devices.disks = [{ name: "root", lun: {} }];
    const { spec: expanded } = expand(spec, {
      preference: { name: "p", spec: { devices: { preferredLunBus: "scsi" } } },
    });
    expect(expanded.domain.devices.disks).toEqual([{ name: "root", lun: { bus: "scsi" } }]);
  });

  it("gives the VMI the instancetype's nodeSelector", () => {
    const placed = { ...u1medium, spec: { ...u1medium.spec, nodeSelector: { "example.com/zone": "a" } } };
    const { spec, causes } = expand(template(), { instancetype: placed });
    expect(causes).toEqual([]);
    expect(spec.nodeSelector).toEqual({ "example.com/zone": "a" });
  });

  it("gives the VMI the template's annotations over the instancetype's over the preference's", () => {
    const { annotations } = expand(
      template(),
      {
        instancetype: { ...u1medium, spec: { ...u1medium.spec, annotations: { a: "it", b: "it" } } },
        preference: { name: "p", spec: { annotations: { a: "p", c: "p" } } },
      },
      { d: "t" },
    );
    expect(annotations).toEqual({ a: "it", b: "it", c: "p", d: "t" });
  });
});

describe("matcherKind", () => {
  it("takes KubeVirt's kinds in any case, singular or plural, and the cluster kind when empty", () => {
    expect(matcherKind("instancetype", undefined)).toBe("VirtualMachineClusterInstancetype");
    expect(matcherKind("instancetype", "virtualmachineinstancetypes")).toBe("VirtualMachineInstancetype");
    expect(matcherKind("preference", "VirtualMachinePreference")).toBe("VirtualMachinePreference");
    expect(matcherKind("preference", "VirtualMachineInstancetype")).toBeUndefined();
  });

  it("names revisions as KubeVirt does", () => {
    expect(revisionName("vm", { metadata: { name: "u1.medium", uid: "abc", generation: 1 } })).toBe(
      "vm-u1.medium-v1beta1-abc-1",
    );
  });
});
