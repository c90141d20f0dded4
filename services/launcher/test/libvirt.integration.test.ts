import { chown, mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { type Domain, DomainState, Hypervisor } from "@unraid/libvirt";
import { defaultVmiSpec, LAUNCHER_UID, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { domainXml } from "../src/domain/converter.ts";
import { type LibvirtDaemon, killQemuUnder, startLibvirtd } from "../src/libvirt/daemon.ts";
import { prepareVmState } from "../src/storage/vm-state.ts";
import { type GuestFolder, guestFolder, removeGuestFolder } from "./guest-files.ts";
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
      firmware: {
        kernelBoot: {
          kernelArgs: "console=ttyS0 quiet",
          container: { image: "tiny:1", kernelPath: "/vmlinuz", initrdPath: "/initrd" },
        },
      },
      // No pod network here: the guest's network is launcher.integration.test.ts's.
      devices: { autoattachPodInterface: false },
    },
  }),
};

beforeAll(async () => {
  folder = await guestFolder();
  // As the launcher runs it: libvirt in session mode, as the qemu user.
  libvirt = await startLibvirtd({
    stateDir: join(folder.dir, "libvirt"),
    uid: LAUNCHER_UID,
    dieWithParent: true,
    log: createLogger({ component: "libvirtd-test", level: "error" }),
  });
  hypervisor = new Hypervisor({ uri: libvirt.uri });
  await hypervisor.connectOpen();
}, 300_000);

afterAll(async () => {
  await hypervisor.connectClose().catch(() => undefined);
  await killQemuUnder(folder.dir);
  await libvirt.stop();
  await removeGuestFolder(folder);
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
  /**
   * The tiny guest's VMI with an EFI bootloader, its domain defined and started; OVMF under emulation needs more than
   * the 128 MiB the tiny guest does.
   */
  const start = async (name: string, secureBoot: boolean, tpm = false) => {
    const efiVmi = {
      ...vmi,
      metadata: { name, namespace: "test" },
      spec: {
        ...vmi.spec,
        domain: {
          ...vmi.spec.domain,
          memory: { guest: "512Mi" },
          firmware: { ...vmi.spec.domain.firmware, bootloader: { efi: { secureBoot } } },
        },
      },
    };
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
    });
    const efiDomain = await hypervisor.domainDefineXML(xml);
    await hypervisor.domainCreate(efiDomain);
    return { efiDomain, serial, live: await hypervisor.domainGetXMLDesc(efiDomain) };
  };
  // Destroyed, and left defined: libvirt undefines a domain with NVRAM only when told to drop it, which the addon
  // cannot say; the daemon goes after the tests.
  const remove = (efiDomain: Domain) => hypervisor.domainDestroy(efiDomain);

  it(
    "boots the tiny guest through OVMF without secure boot, with an emulated TPM " +
      "that libvirt runs as the launcher's user",
    async () => {
      const { efiDomain, serial, live } = await start("tiny-efi", false, true);
      expect(live).toMatch(/<tpm model='tpm-tis'>\s*<backend type='emulator' version='2\.0'/);
      // libvirt chose OVMF (its XML quotes with ') by the features asked for: a firmware without secure boot, and a
      // copy of its variables for this domain.
      expect(live).toMatch(/<loader [^>]*type='pflash'[^>]*>[^<]*OVMF_CODE[^<]*<\/loader>/);
      expect(live).not.toMatch(/secure='yes'|\.ms\.fd/);
      expect(live).toMatch(/<nvram[^>]*>[^<]*tiny-efi[^<]*<\/nvram>/);
      await readUntil(serial, "/ # ", "\n", 100_000);
      expect(await readUntil(serial, "efi-booted-9", "echo efi-booted-$((4+5))\n")).toContain("efi-booted-9");
      await remove(efiDomain);
    },
  );

  it(
    "keeps the EFI variables and the TPM's state in the VM's state folder, where " +
      "the next launcher's libvirt finds them",
    async () => {
      // The backend-storage claim's folder, as the pod mounts it, shared by two launchers one after the other.
      const vmStateDir = join(folder.dir, "vm-state");
      await mkdir(vmStateDir);
      await chown(vmStateDir, LAUNCHER_UID, LAUNCHER_UID);
      const persistent: VirtualMachineInstance = {
        ...vmi,
        metadata: { name: "tiny-state", namespace: "test" },
        spec: {
          ...vmi.spec,
          domain: {
            ...vmi.spec.domain,
            memory: { guest: "512Mi" },
            firmware: { ...vmi.spec.domain.firmware, bootloader: { efi: { secureBoot: false, persistent: true } } },
            devices: { ...vmi.spec.domain.devices, tpm: { persistent: true } },
          },
        },
      };
      const variable = "/sys/firmware/efi/efivars/KubevirtTsTest-5f0e7c1a-3b2d-4c6e-8f9a-0b1c2d3e4f50";
      const uuid = "0b7a3c2e-5f1d-4e4a-9c53-2f0d1e6a7b14";
      /**
       * One launcher's run: its own libvirtd (as a new pod's), the domain booted, the TPM's reset count read; returns
       * it and what the guest said.
       */
      const run = async (daemon: LibvirtDaemon, connection: Hypervisor, n: number, commands: string) => {
        const state = await prepareVmState(persistent, vmStateDir, daemon.swtpmStorageDir, uuid);
        // The launcher makes these as its own user; here the test is root.
        for (const dir of ["nvram", "swtpm"]) await chown(join(vmStateDir, dir), LAUNCHER_UID, LAUNCHER_UID);
        const serial = join(folder.dir, `state-${String(n)}.sock`);
        const xml = domainXml(persistent, {
          domainType: "qemu",
          uuid,
          disks: {},
          serialSocket: serial,
          vncSocket: join(folder.dir, `state-${String(n)}-vnc.sock`),
          guestAgentSocket: join(folder.dir, `state-${String(n)}-ga.sock`),
          kernelBoot: { kernel: folder.kernel, initrd: folder.initrd },
          ...(state.nvram !== undefined ? { nvram: state.nvram } : {}),
        });
        const stateDomain = await connection.domainDefineXML(xml);
        await connection.domainCreate(stateDomain);
        expect(await connection.domainGetXMLDesc(stateDomain)).toMatch(
          /<tpm model='tpm-crb'>\s*<backend type='emulator' version='2\.0' persistent_state='yes'/,
        );
        await readUntil(serial, "/ # ", "\n", 100_000);
        // TPM2_ReadClock: its reply's resetCount (bytes 26 to 29) counts the TPM's resets, one at each power-on, since
        // it was made. The command goes in one write (the device takes a command whole), from a file: the shell's
        // printf may write it in parts.
        const readClock =
          "printf '\\200\\001\\000\\000\\000\\012\\000\\000\\001\\201' > /tmp/read-clock; exec 3<>/dev/tpmrm0; " +
          "dd if=/tmp/read-clock bs=10 count=1 >&3 2>/dev/null; reply=$(dd bs=64 count=1 <&3 2>/dev/null | od " +
          "-An -tx1 | tr -d ' \\n'); exec 3>&-";
        const output = await readUntil(
          serial,
          `done-${String(n + 40)}`,
          `mount -t efivarfs efivarfs /sys/firmware/efi/efivars; ${readClock}; echo ` +
            `tpm-reply=$reply; ${commands}; echo done-$((${String(n)}+40))\n`,
          60_000,
        );
        const reply = /tpm-reply=([0-9a-f]{70})/.exec(output)?.[1];
        if (!reply) throw new Error(`no TPM2_ReadClock reply: ${output}`);
        expect(reply.slice(12, 20)).toBe("00000000");
        await connection.domainDestroy(stateDomain);
        return { resetCount: parseInt(reply.slice(52, 60), 16), output };
      };
      const first = await run(
        libvirt,
        hypervisor,
        1,
        `printf '\\007\\000\\000\\000kubevirt-ts-kept' > ${variable} && echo wrote-variable`,
      );
      expect(first.output).toMatch(/\nwrote-variable/);
      expect(await stat(join(vmStateDir, "nvram", "test_tiny-state_VARS.fd"))).toBeDefined();
      expect(await stat(join(vmStateDir, "swtpm", "tpm2", "tpm2-00.permall"))).toBeDefined();

      // A new launcher: a libvirtd with nothing of the first's but the state folder.
      const next = await startLibvirtd({
        stateDir: join(folder.dir, "libvirt-next"),
        uid: LAUNCHER_UID,
        dieWithParent: true,
        log: createLogger({ component: "libvirtd-test", level: "error" }),
      });
      const nextHypervisor = new Hypervisor({ uri: next.uri });
      await nextHypervisor.connectOpen();
      try {
        const second = await run(next, nextHypervisor, 2, `echo variable=$(tail -c +5 ${variable})`);
        expect(second.output).toContain("variable=kubevirt-ts-kept");
        // The same TPM, powered on once more: a fresh one would count as many resets as the first run's did.
        expect(second.resetCount).toBeGreaterThan(first.resetCount);
      } finally {
        await nextHypervisor.connectClose().catch(() => undefined);
        await next.stop();
      }
    },
  );

  it(
    "runs with secure boot on OVMF's secure firmware, with SMM and Microsoft's keys enrolled " +
      "(Debian's own kernel, not signed by them, is not booted here)",
    async () => {
      const { efiDomain, live } = await start("tiny-secure", true);
      expect(live).toMatch(/<loader [^>]*secure='yes'[^>]*>[^<]*OVMF_CODE[^<]*\.ms\.fd<\/loader>/);
      expect(live).toMatch(/<nvram template='[^']*OVMF_VARS[^']*\.ms\.fd'>/);
      expect(live).toMatch(/<smm state='on'\/>/);
      expect((await hypervisor.domainGetInfo(efiDomain)).state).toBe(DomainState.RUNNING);
      await remove(efiDomain);
    },
  );
});
