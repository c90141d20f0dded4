import { chown, copyFile, readFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { type Domain, DomainState, Hypervisor } from "@unraid/libvirt";
import { buildTinyGuest } from "@kubevirt-ts/images";
import { type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { domainXml } from "../src/domain/converter.ts";
import { QEMU_UID, type SessionLibvirt, startSessionLibvirt } from "./session-libvirt.ts";

// The converter's domain, defined and run by a real libvirt and QEMU (with
// emulation) as the unprivileged qemu user, through the @unraid/libvirt addon.

let libvirt: SessionLibvirt;
let hypervisor: Hypervisor;
let domain: Domain;
let readyMessage: string;

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

/** Reads a unix socket's stream until it contains `text`. */
function readUntil(path: string, text: string, send?: string, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let output = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no ${JSON.stringify(text)} within ${String(timeoutMs)} ms; got ${JSON.stringify(output.slice(-300))}`));
    }, timeoutMs);
    socket.on("connect", () => {
      if (send !== undefined) socket.write(send);
    });
    socket.on("data", (chunk) => {
      output += chunk.toString("latin1");
      if (output.includes(text)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(output);
      }
    });
    socket.on("error", reject);
  });
}

beforeAll(async () => {
  const guest = await buildTinyGuest();
  readyMessage = guest.readyMessage;
  libvirt = await startSessionLibvirt();
  // The qemu user cannot read root's cache: the guest's files go next to its sockets.
  for (const [from, to] of [[guest.kernel, "vmlinuz"], [guest.initrd, "initrd.gz"]] as const) {
    await copyFile(from, join(libvirt.dir, "guest", to));
    await chown(join(libvirt.dir, "guest", to), QEMU_UID, QEMU_UID);
  }
  hypervisor = new Hypervisor({ uri: libvirt.uri });
  await hypervisor.connectOpen();
}, 300_000);

afterAll(async () => {
  await hypervisor.connectClose().catch(() => undefined);
  await libvirt.stop();
});

const sockets = () => ({ serial: join(libvirt.dir, "guest", "serial.sock"), vnc: join(libvirt.dir, "guest", "vnc.sock") });

describe("a domain from the converter", () => {
  it("is defined and boots the tiny guest, whose serial console shows its output and answers", async () => {
    const xml = domainXml(vmi, {
      domainType: "qemu",
      uuid: "0b7a3c2e-5f1d-4e4a-9c53-2f0d1e6a7b11",
      disks: {},
      serialSocket: sockets().serial,
      serialLog: join(libvirt.dir, "guest", "serial.log"),
      vncSocket: sockets().vnc,
      kernelBoot: { kernel: join(libvirt.dir, "guest", "vmlinuz"), initrd: join(libvirt.dir, "guest", "initrd.gz") },
      guestNetwork: { address: "198.19.254.0", prefix: 24 },
    });
    domain = await hypervisor.domainDefineXML(xml);
    await hypervisor.domainCreate(domain);
    expect((await hypervisor.domainGetInfo(domain)).state).toBe(DomainState.RUNNING);

    await readUntil(sockets().serial, "/ # ", "\n");
    // Boot output printed before anyone connected is kept in the serial log.
    expect(await readFile(join(libvirt.dir, "guest", "serial.log"), "latin1")).toContain(readyMessage);
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
