import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { run } from "./exec.ts";
import { SECTOR } from "./mbr.ts";

// Makes a raw disk image boot by itself through BIOS (and optionally EFI)
// with syslinux: its boot code in the MBR, and a FAT partition holding
// syslinux, its configuration and the files it loads. Nothing is mounted:
// mkfs.fat formats the partition in place, mtools fills it and syslinux
// --offset installs into it. The disk's partition table is the caller's.

/** syslinux's BIOS boot code for the MBR, from Debian's syslinux-common. */
const MBR_BOOT_CODE = "/usr/lib/syslinux/mbr/mbr.bin";
/** syslinux's EFI loader and its core module, from Debian's syslinux-efi. */
const EFI_LOADER = "/usr/lib/SYSLINUX.EFI/efi64/syslinux.efi";
const EFI_LDLINUX = "/usr/lib/syslinux/modules/efi64/ldlinux.e64";

export interface SyslinuxPartition {
  /** Where the FAT partition lies on the disk, in sectors, as its partition table says. */
  startSector: number;
  sectors: number;
  /** Files to copy into the partition's root: the file's path on this host, and its name there. */
  files: { from: string; to: string }[];
  /** syslinux.cfg. */
  config: string;
  /** Also boot through EFI firmware (OVMF): syslinux's EFI build at the removable media path. */
  efi?: boolean;
}

/** Writes syslinux's boot code into the MBR of `raw` and a bootable FAT16 file system into its partition. */
export async function makeSyslinuxBootable(raw: string, work: string, partition: SyslinuxPartition): Promise<void> {
  await run("dd", [`if=${MBR_BOOT_CODE}`, `of=${raw}`, "bs=440", "count=1", "conv=notrunc", "status=none"]);
  const offset = partition.startSector * SECTOR;
  await run("mkfs.fat", [
    "-F",
    "16",
    "-n",
    "BOOT",
    "-h",
    String(partition.startSector),
    "--offset",
    String(partition.startSector),
    raw,
    String((partition.sectors * SECTOR) / 1024),
  ]);
  const image = `${raw}@@${String(offset)}`;
  const config = join(work, "syslinux.cfg");
  await writeFile(config, partition.config);
  for (const file of partition.files) await run("mcopy", ["-i", image, file.from, `::/${file.to}`]);
  await run("mcopy", ["-i", image, config, "::/syslinux.cfg"]);
  await run("syslinux", ["--offset", String(offset), "--install", raw]);
  if (partition.efi) {
    // Unsigned, so secure boot stays off for such a guest.
    await run("mmd", ["-i", image, "::/EFI", "::/EFI/BOOT"]);
    await run("mcopy", ["-i", image, EFI_LOADER, "::/EFI/BOOT/BOOTX64.EFI"]);
    await run("mcopy", ["-i", image, EFI_LDLINUX, "::/EFI/BOOT/ldlinux.e64"]);
    await run("mcopy", ["-i", image, config, "::/EFI/BOOT/syslinux.cfg"]);
  }
}
