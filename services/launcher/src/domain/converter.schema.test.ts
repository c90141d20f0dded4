import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { type VmiSpec, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type DomainContext, domainXml } from "./converter.ts";

// Every domain the converter renders must validate against libvirt's own
// schema (virt-xml-validate), or libvirt would refuse to define it.

const ctx: DomainContext = {
  domainType: "qemu",
  uuid: "5d9e3a1c-0000-4000-8000-000000000001",
  disks: {
    root: { path: "/run/disks/root.qcow2", format: "qcow2" },
    cd: { path: "/run/disks/cd.iso", format: "raw" },
    data: { path: "/run/disks/data.img", format: "raw" },
    cloudinit: { path: "/run/disks/cloudinit.iso", format: "raw", readonly: true },
  },
  serialSocket: "/run/sockets/virt-serial0",
  serialLog: "/run/logs/serial0.log",
  vncSocket: "/run/sockets/virt-vnc",
  guestAgentSocket: "/run/sockets/guest-agent.sock",
  kernelBoot: { kernel: "/run/kernel/vmlinuz", initrd: "/run/kernel/initrd" },
};

const specs: [string, VmiSpec][] = [
  [
    "a VM with a containerDisk, cloud-init and masquerade",
    {
      domain: {
        memory: { guest: "1Gi" },
        cpu: { sockets: 1, cores: 2, threads: 1 },
        devices: {
          rng: {},
          disks: [
            { name: "root", disk: { bus: "virtio" }, bootOrder: 1 },
            { name: "cloudinit", disk: { bus: "virtio" } },
          ],
          interfaces: [{ name: "default", masquerade: {}, macAddress: "02:00:00:00:00:01" }],
        },
      },
      networks: [{ name: "default", pod: {} }],
      volumes: [
        { name: "root", containerDisk: { image: "g:1" } },
        { name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config" } },
      ],
    },
  ],
  [
    "sata, scsi, a CD-ROM and a serial number, headless",
    {
      domain: {
        memory: { guest: "512Mi" },
        devices: {
          autoattachGraphicsDevice: false,
          disks: [
            { name: "root", disk: { bus: "sata" }, serial: "root-1" },
            { name: "data", disk: { bus: "scsi" }, cache: "writeback" },
            { name: "cd", cdrom: { bus: "sata" } },
          ],
        },
      },
      volumes: [
        { name: "root", containerDisk: { image: "g:1" } },
        { name: "data", emptyDisk: { capacity: "1Gi" } },
        { name: "cd", containerDisk: { image: "iso:1" } },
      ],
    },
  ],
  [
    "a Windows-style guest: Hyper-V, SMM, EFI with secure boot, local time and timers",
    {
      domain: {
        memory: { guest: "2Gi" },
        firmware: { bootloader: { efi: { secureBoot: true } } },
        features: {
          acpi: {},
          apic: { endOfInterrupt: true },
          smm: {},
          pvspinlock: {},
          hyperv: {
            relaxed: {},
            vapic: {},
            vpindex: {},
            runtime: {},
            synic: {},
            reset: {},
            frequencies: {},
            reenlightenment: {},
            tlbflush: {},
            ipi: {},
            evmcs: {},
            spinlocks: { spinlocks: 8191 },
            synictimer: { direct: {} },
            vendorid: { vendorid: "kubevirt-ts" },
          },
          kvm: { hidden: true },
        },
        clock: {
          timezone: "Europe/Paris",
          timer: {
            hpet: { present: false },
            pit: { tickPolicy: "delay" },
            rtc: { tickPolicy: "catchup", track: "guest" },
            hyperv: {},
            kvm: { present: false },
          },
        },
        devices: {
          tpm: {},
          watchdog: { name: "wd", i6300esb: { action: "reset" } },
          inputs: [{ name: "tablet", type: "tablet", bus: "virtio" }],
          logSerialConsole: false,
          disks: [{ name: "root", disk: { bus: "sata" } }],
        },
      },
      volumes: [{ name: "root", containerDisk: { image: "g:1" } }],
    },
  ],
  [
    "a UTC clock running ahead, without ACPI",
    {
      domain: {
        memory: { guest: "128Mi" },
        cpu: { model: "Skylake-Client" },
        features: { acpi: { enabled: false }, smm: { enabled: false } },
        clock: { utc: { offsetSeconds: -60 } },
        devices: { disks: [] },
      },
      volumes: [],
    },
  ],
  [
    "a kernel boot without a serial console",
    {
      domain: {
        memory: { guest: "128Mi" },
        firmware: {
          kernelBoot: {
            kernelArgs: "console=ttyS0 quiet",
            container: { image: "k:1", kernelPath: "/vmlinuz", initrdPath: "/initrd" },
          },
        },
        devices: { autoattachSerialConsole: false, disks: [] },
      },
      volumes: [],
    },
  ],
];

async function validate(xml: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "domain-"));
  try {
    await writeFile(join(dir, "domain.xml"), xml);
    // Exits non-zero (and the promise rejects with xmllint's complaint) when the XML does not validate.
    const { stdout, stderr } = await promisify(execFile)("virt-xml-validate", [join(dir, "domain.xml"), "domain"]);
    return stdout + stderr;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("the schema check", { timeout: 30_000 }, () => {
  it("refuses a domain libvirt would refuse", async () => {
    await expect(validate('<domain type="bogus"><name>x</name></domain>')).rejects.toThrow();
  });
});

describe("the rendered domain", { timeout: 30_000 }, () => {
  it.each(specs)("for %s validates against libvirt's schema", async (_name, spec) => {
    const xml = domainXml(
      {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name: "vm", namespace: "ns" },
        spec: defaultVmiSpec(spec),
      },
      ctx,
    );
    expect(await validate(xml)).toContain("validates");
  });
});
