import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { type Domain, DomainState, Hypervisor } from "@unraid/libvirt";
import { defaultVmiSpec, LAUNCHER_UID, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { domainXml } from "../src/domain/converter.ts";
import { type LibvirtDaemon, killQemuUnder, startLibvirtd } from "../src/libvirt/daemon.ts";
import { type GuestFolder, guestFolder } from "./guest-files.ts";
import { readUntil } from "./serial.ts";

// The converter's domain, defined and run by a real libvirt and QEMU (with
// emulation) as the unprivileged qemu user, through the @unraid/libvirt addon.

let folder: GuestFolder;
let libvirt: LibvirtDaemon;
let hypervisor: Hypervisor;
let domain: Domain;

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "tiny", namespace: "test" },
  spec: defaultVmiSpec({
    domain: {
      memory: { guest: "128Mi" },
      firmware: { kernelBoot: { kernelArgs: "console=ttyS0 quiet", container: { image: "tiny:1", kernelPath: "/vmlinuz", initrdPath: "/initrd" } } },
      devices: {},
    },
  }),
};

beforeAll(async () => {
  folder = await guestFolder();
  // As the launcher runs it: libvirt in session mode, as the qemu user.
  libvirt = await startLibvirtd({ stateDir: join(folder.dir, "libvirt"), uid: LAUNCHER_UID, dieWithParent: true, log: createLogger({ component: "libvirtd-test", level: "error" }) });
  hypervisor = new Hypervisor({ uri: libvirt.uri });
  await hypervisor.connectOpen();
}, 300_000);

afterAll(async () => {
  await hypervisor.connectClose().catch(() => undefined);
  await killQemuUnder(folder.dir);
  await libvirt.stop();
  await rm(folder.dir, { recursive: true, force: true });
});

const sockets = () => ({ serial: join(folder.dir, "serial.sock"), vnc: join(folder.dir, "vnc.sock") });

describe("a domain from the converter", () => {
  it("is defined and boots the tiny guest, whose serial console shows its output and answers", async () => {
    const xml = domainXml(vmi, {
      domainType: "qemu",
      uuid: "0b7a3c2e-5f1d-4e4a-9c53-2f0d1e6a7b11",
      disks: {},
      serialSocket: sockets().serial,
      serialLog: join(folder.dir, "serial.log"),
      vncSocket: sockets().vnc,
      guestAgentSocket: join(folder.dir, "ga.sock"),
      kernelBoot: { kernel: folder.kernel, initrd: folder.initrd },
      guestNetwork: { address: "198.19.254.0", prefix: 24 },
    });
    domain = await hypervisor.domainDefineXML(xml);
    await hypervisor.domainCreate(domain);
    expect((await hypervisor.domainGetInfo(domain)).state).toBe(DomainState.RUNNING);

    await readUntil(sockets().serial, "/ # ", "\n");
    // Boot output printed before anyone connected is kept in the serial log.
    expect(await readFile(join(folder.dir, "serial.log"), "latin1")).toContain(folder.guest.readyMessage);
    const output = await readUntil(sockets().serial, "kubevirt-ts-42", "echo kubevirt-ts-$((40+2))\n");
    expect(output).toContain("kubevirt-ts-42");
  });

  it("answers VNC with RFB", async () => {
    const greeting = await readUntil(sockets().vnc, "\n", undefined, 10_000);
    expect(greeting).toMatch(/^RFB 003\.00\d\n/);
  });

  it("pauses and resumes", async () => {
    await hypervisor.domainSuspend(domain);
    expect((await hypervisor.domainGetInfo(domain)).state).toBe(DomainState.PAUSED);
    await hypervisor.domainResume(domain);
    expect((await hypervisor.domainGetInfo(domain)).state).toBe(DomainState.RUNNING);
    expect(await readUntil(sockets().serial, "resumed-7", "echo resumed-$((3+4))\n")).toContain("resumed-7");
  });

  it("is destroyed and undefined", async () => {
    await hypervisor.domainDestroy(domain);
    expect((await hypervisor.domainGetInfo(domain)).state).toBe(DomainState.SHUTOFF);
    await hypervisor.domainUndefine(domain);
    expect(await hypervisor.connectListAllDomains()).toEqual([]);
  });
});

describe("a domain with EFI firmware", () => {
  /** The tiny guest's VMI with an EFI bootloader, its domain defined and started; OVMF under emulation needs more than the 128 MiB the tiny guest does. */
  const start = async (name: string, secureBoot: boolean, tpm = false) => {
    const efiVmi = { ...vmi, metadata: { name, namespace: "test" }, spec: { ...vmi.spec, domain: { ...vmi.spec.domain, memory: { guest: "512Mi" }, firmware: { ...vmi.spec.domain.firmware, bootloader: { efi: { secureBoot } } } } } };
    if (tpm) efiVmi.spec.domain.devices = { ...efiVmi.spec.domain.devices, tpm: {} };
    const serial = join(folder.dir, `${name}.sock`);
    const xml = domainXml(efiVmi, {
      domainType: "qemu",
      uuid: secureBoot ? "0b7a3c2e-5f1d-4e4a-9c53-2f0d1e6a7b13" : "0b7a3c2e-5f1d-4e4a-9c53-2f0d1e6a7b12",
      disks: {},
      serialSocket: serial,
      serialLog: join(folder.dir, `${name}.log`),
      vncSocket: join(folder.dir, `${name}-vnc.sock`),
      guestAgentSocket: join(folder.dir, `${name}-ga.sock`),
      kernelBoot: { kernel: folder.kernel, initrd: folder.initrd },
      guestNetwork: { address: "198.19.254.0", prefix: 24 },
    });
    const efiDomain = await hypervisor.domainDefineXML(xml);
    await hypervisor.domainCreate(efiDomain);
    return { efiDomain, serial, live: await hypervisor.domainGetXMLDesc(efiDomain) };
  };
  // Destroyed, and left defined: libvirt undefines a domain with NVRAM only when told to drop it, which the addon cannot say; the daemon goes after the tests.
  const remove = (efiDomain: Domain) => hypervisor.domainDestroy(efiDomain);

  it("boots the tiny guest through OVMF without secure boot, with an emulated TPM that libvirt runs as the launcher's user", async () => {
    const { efiDomain, serial, live } = await start("tiny-efi", false, true);
    expect(live).toMatch(/<tpm model='tpm-tis'>\s*<backend type='emulator' version='2\.0'/);
    // libvirt chose OVMF (its XML quotes with ') by the features asked for: a firmware without secure boot, and a copy of its variables for this domain.
    expect(live).toMatch(/<loader [^>]*type='pflash'[^>]*>[^<]*OVMF_CODE[^<]*<\/loader>/);
    expect(live).not.toMatch(/secure='yes'|\.ms\.fd/);
    expect(live).toMatch(/<nvram[^>]*>[^<]*tiny-efi[^<]*<\/nvram>/);
    await readUntil(serial, "/ # ", "\n", 100_000);
    expect(await readUntil(serial, "efi-booted-9", "echo efi-booted-$((4+5))\n")).toContain("efi-booted-9");
    await remove(efiDomain);
  });

  it("runs with secure boot on OVMF's secure firmware, with SMM and Microsoft's keys enrolled (Debian's own kernel, not signed by them, is not booted here)", async () => {
    const { efiDomain, live } = await start("tiny-secure", true);
    expect(live).toMatch(/<loader [^>]*secure='yes'[^>]*>[^<]*OVMF_CODE[^<]*\.ms\.fd<\/loader>/);
    expect(live).toMatch(/<nvram template='[^']*OVMF_VARS[^']*\.ms\.fd'>/);
    expect(live).toMatch(/<smm state='on'\/>/);
    expect((await hypervisor.domainGetInfo(efiDomain)).state).toBe(DomainState.RUNNING);
    await remove(efiDomain);
  });
});
