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
