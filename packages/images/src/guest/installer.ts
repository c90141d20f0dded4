import { createHash } from "node:crypto";
import { copyFile, mkdir, mkdtemp, open, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { makeSyslinuxBootable } from "../bootdisk.ts";
import { cpioArchive } from "../cpio.ts";
import { env } from "../env.ts";
import { exists, log, run } from "../exec.ts";
import { SECTOR, mbrPartitionTable } from "../mbr.ts";
import { LOAD_MODULES, buildTinyGuest } from "./tiny.ts";

// An OS installer on a CD, for tests of installing a VM from an ISO: a
// bootable ISO (isolinux, El Torito) that starts the tiny guest's kernel with
// an installer initramfs, which writes an installed system (the tiny guest on
// a disk that boots by itself through syslinux) to the VM's first virtio
// disk and powers the VM off. Booted from that disk afterwards, the tiny
// guest's kernel command line says so: `kubevirt_ts_boot=disk`.

const INSTALLER_BOOT_ARG = "kubevirt_ts_boot=installer";
export const INSTALLED_BOOT_ARG = "kubevirt_ts_boot=disk";
/** What the installer prints on the serial console when the system is on the disk, just before it powers off. */
const INSTALLER_DONE = "kubevirt-ts installer: installed";
const INSTALLER_FAILED = "kubevirt-ts installer: failed";
/** The disk it installs onto: the VM's first virtio disk. */
const INSTALLER_TARGET = "/dev/vda";

/** The installed system's disk: a FAT boot partition from 1 MiB to the end of 32 MiB. */
const DISK_BYTES = 32 * 2 ** 20;
const BOOT_START = 2048;
const BOOT_SECTORS = DISK_BYTES / SECTOR - BOOT_START;

const syslinuxConfig = (initrd: string, bootArg: string) =>
  [
    "SERIAL 0 115200",
    "DEFAULT tiny",
    "PROMPT 0",
    "TIMEOUT 0",
    "LABEL tiny",
    "  LINUX /vmlinuz",
    `  INITRD /${initrd}`,
    // ttyS0 last: it becomes /dev/console, where the tests read the guest.
    `  APPEND console=tty0 console=ttyS0,115200n8 ${bootArg}`,
    "",
  ].join("\n");

// The installer's init: it replaces the tiny guest's (the kernel unpacks the installer's archive after the guest's),
// and finds the installed system's disk image at /installed.img.gz. On a failure it stays up with a shell, so the
// VM does not power off as if it had installed.
const INSTALLER_INIT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
${LOAD_MODULES}
echo "kubevirt-ts installer: installing onto ${INSTALLER_TARGET}"
i=0
while [ ! -b ${INSTALLER_TARGET} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -b ${INSTALLER_TARGET} ] && gunzip -c /installed.img.gz > ${INSTALLER_TARGET} && sync; then
  echo "${INSTALLER_DONE}"
  poweroff -f
fi
echo "${INSTALLER_FAILED}: no ${INSTALLER_TARGET}, or it could not be written"
while true; do setsid cttyhack sh -l; done
`;

/** A key of what goes into the installer: the tiny guest's build (its folder's name) and the recipes here. */
function recipeKey(tinyDir: string): string {
  return createHash("sha256")
    .update(tinyDir)
    .update(INSTALLER_INIT)
    .update(syslinuxConfig("", ""))
    .update(String(DISK_BYTES))
    .digest("hex")
    .slice(0, 16);
}

/** The installed system: the tiny guest on a raw disk that boots by itself through BIOS. */
async function writeInstalledDisk(raw: string, work: string, kernel: string, initrd: string): Promise<void> {
  const file = await open(raw, "w");
  await file.truncate(DISK_BYTES);
  await file.write(
    mbrPartitionTable([{ type: 0x0e, startSector: BOOT_START, sectors: BOOT_SECTORS, bootable: true }]),
    0,
    66,
    446,
  );
  await file.close();
  await makeSyslinuxBootable(raw, work, {
    startSector: BOOT_START,
    sectors: BOOT_SECTORS,
    files: [
      { from: kernel, to: "vmlinuz" },
      { from: initrd, to: "initrd.gz" },
    ],
    config: syslinuxConfig("initrd.gz", INSTALLED_BOOT_ARG),
  });
}

/** The installer ISO (built once per tiny guest and recipe, and cached): its path. */
export async function buildTinyInstallerIso(): Promise<string> {
  const guest = await buildTinyGuest();
  const dir = join(env.KUBEVIRT_TS_CACHE, "guests");
  const iso = join(dir, `tiny-installer-${recipeKey(guest.kernel)}.iso`);
  if (await exists(iso)) return iso;
  log("building the tiny guest's installer ISO");
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, "installer-work-"));
  try {
    const installed = join(work, "installed.img");
    await writeInstalledDisk(installed, work, guest.kernel, guest.initrd);
    // The kernel unpacks concatenated archives in order, a later file replacing an earlier one of the same name:
    // the tiny guest's initramfs (busybox, its modules) and then the installer's init and the image it writes.
    const installer = cpioArchive([
      { path: "init", type: "file", data: Buffer.from(INSTALLER_INIT), mode: 0o755 },
      { path: "installed.img.gz", type: "file", data: gzipSync(await readFile(installed), { level: 9 }) },
    ]);
    const tree = join(work, "cd");
    await mkdir(join(tree, "isolinux"), { recursive: true });
    await copyFile("/usr/lib/ISOLINUX/isolinux.bin", join(tree, "isolinux", "isolinux.bin"));
    await copyFile("/usr/lib/syslinux/modules/bios/ldlinux.c32", join(tree, "isolinux", "ldlinux.c32"));
    await writeFile(join(tree, "isolinux", "isolinux.cfg"), syslinuxConfig("install.gz", INSTALLER_BOOT_ARG));
    await copyFile(guest.kernel, join(tree, "vmlinuz"));
    await writeFile(
      join(tree, "install.gz"),
      Buffer.concat([await readFile(guest.initrd), gzipSync(installer, { level: 1 })]),
    );
    await run("genisoimage", [
      "-quiet",
      "-V",
      "KUBEVIRT_TS_INSTALL",
      "-o",
      `${iso}.partial`,
      "-b",
      "isolinux/isolinux.bin",
      "-c",
      "isolinux/boot.cat",
      "-no-emul-boot",
      "-boot-load-size",
      "4",
      "-boot-info-table",
      "-R",
      "-J",
      tree,
    ]);
    await rename(`${iso}.partial`, iso);
    return iso;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
