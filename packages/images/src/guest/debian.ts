import { createHash } from "node:crypto";
import { mkdir, mkdtemp, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { makeSyslinuxBootable } from "../bootdisk.ts";
import { env } from "../env.ts";
import { exists, log, run } from "../exec.ts";
import { SECTOR, mbrPartitionTable } from "../mbr.ts";
import { buildRootfs } from "../rootfs.ts";

// The Debian guest: a real bookworm system with systemd, a getty on the
// serial console, cloud-init reading KubeVirt's NoCloud disk, DHCP on its
// first NIC and the QEMU guest agent, on a disk that boots by itself through BIOS or EFI
// (syslinux on a small FAT partition, the root on ext4), with sshd, as a compressed qcow2 for a containerDisk.
// Everything is made without mounting anything: mkfs.ext4 fills the root
// from a folder, mtools fills the FAT partition.

export const DEBIAN_GUEST_PACKAGES = [
  "systemd-sysv",
  "udev",
  "dbus",
  "linux-image-cloud-amd64",
  "initramfs-tools",
  "cloud-init",
  // Reports the guest's OS to the VMI's status (guestOSInfo).
  "qemu-guest-agent",
  // What virtctl ssh and virtctl port-forward reach; cloud-init gives each VM its own host keys on first boot.
  "openssh-server",
  "ifupdown",
  "isc-dhcp-client",
  "sudo",
  "procps",
  "iproute2",
  "iputils-ping",
  "netbase",
];

/** The root filesystem's UUID: fixed, so the image's content (and tag) only changes with its packages. */
const ROOT_UUID = "6b7d3c2e-6b1d-4c52-9a6f-6b75626576ef";
const DISK_BYTES = 4 * 2 ** 30;
const BOOT_START = 2048;
const BOOT_SECTORS = (128 * 2 ** 20) / SECTOR;
const ROOT_START = BOOT_START + BOOT_SECTORS;

/** The guest's own settings, applied to the finished tree ($1) by mmdebstrap. */
const HOOKS = [
  // Only KubeVirt's NoCloud disk (or nothing): probing clouds' metadata services would stall the boot.
  // The image has no locales but C.UTF-8, which glibc always has.
  `printf 'datasource_list: [ NoCloud, None ]\\nlocale: C.UTF-8\\n' > "$1/etc/cloud/cloud.cfg.d/90-kubevirt-ts.cfg"`,
  `printf 'UUID=${ROOT_UUID} / ext4 defaults,errors=remount-ro 0 1\\n' > "$1/etc/fstab"`,
  `printf 'auto lo\\niface lo inet loopback\\n\\nsource /etc/network/interfaces.d/*\\n' > "$1/etc/network/interfaces"`,
  `printf 'kubevirt-ts-debian\\n' > "$1/etc/hostname"`,
  // No machine-id in the image: each VM makes its own on first boot.
  `truncate -s 0 "$1/etc/machine-id"`,
  // No SSH host keys in the image either: cloud-init makes each VM's on its first boot, before sshd starts;
  // should it not (no cloud-init disk), sshd makes the missing ones itself before its config check.
  `rm -f "$1"/etc/ssh/ssh_host_*`,
  `mkdir -p "$1/etc/systemd/system/ssh.service.d" && printf ` +
    "'[Service]\\nExecStartPre=\\nExecStartPre=/usr/bin/ssh-keygen -A\\nExecStartPre=/usr/sbin/sshd -t\\n' > " +
    `"$1/etc/systemd/system/ssh.service.d/host-keys.conf"`,
];

function bootConfig(): string {
  return [
    "SERIAL 0 115200",
    "DEFAULT debian",
    "PROMPT 0",
    "TIMEOUT 0",
    "LABEL debian",
    "  LINUX /vmlinuz",
    "  INITRD /initrd.img",
    // ttyS0 last: it becomes /dev/console, and systemd starts a getty on it.
    `  APPEND root=UUID=${ROOT_UUID} ro console=tty0 console=ttyS0,115200n8`,
    "",
  ].join("\n");
}

/** The qcow2 disk of the Debian guest, built once per root filesystem and cached. */
export async function buildDebianGuestDisk(): Promise<string> {
  const rootfs = await buildRootfs({ name: "debian-guest", packages: DEBIAN_GUEST_PACKAGES, hooks: HOOKS });
  const key = createHash("sha256")
    .update(rootfs.digest)
    .update(bootConfig())
    .update(String(DISK_BYTES))
    .update("bios+efi")
    .digest("hex")
    .slice(0, 16);
  const dir = join(env.KUBEVIRT_TS_CACHE, "guests");
  const disk = join(dir, `debian-${key}.qcow2`);
  if (await exists(disk)) return disk;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, "debian-work-"));
  try {
    log("building the Debian guest's disk (root filesystem, boot partition, qcow2)");
    const root = join(work, "root");
    await mkdir(root);
    await run("tar", ["-xpf", rootfs.path, "-C", root, "--numeric-owner"]);
    const boot = await readdir(join(root, "boot"));
    const kernel = boot.find((f) => f.startsWith("vmlinuz-"));
    const initrd = boot.find((f) => f.startsWith("initrd.img-"));
    if (!kernel || !initrd) throw new Error(`the guest's /boot holds no kernel and initrd: ${boot.join(", ")}`);

    const raw = join(work, "disk.img");
    const file = await open(raw, "w");
    await file.truncate(DISK_BYTES);
    const rootSectors = DISK_BYTES / SECTOR - ROOT_START;
    await file.write(
      mbrPartitionTable([
        { type: 0x0e, startSector: BOOT_START, sectors: BOOT_SECTORS, bootable: true },
        { type: 0x83, startSector: ROOT_START, sectors: rootSectors },
      ]),
      0,
      66,
      446,
    );
    await file.close();
    await makeSyslinuxBootable(raw, work, {
      startSector: BOOT_START,
      sectors: BOOT_SECTORS,
      files: [
        { from: join(root, "boot", kernel), to: "vmlinuz" },
        { from: join(root, "boot", initrd), to: "initrd.img" },
      ],
      config: bootConfig(),
      // The same loader for EFI firmware, as KubeVirt's preferredEfi asks.
      efi: true,
    });

    await run("mkfs.ext4", [
      "-q",
      "-F",
      "-L",
      "debian-root",
      "-U",
      ROOT_UUID,
      "-d",
      root,
      "-E",
      `offset=${String(ROOT_START * SECTOR)}`,
      raw,
      `${String((rootSectors * SECTOR) / 1024)}k`,
    ]);
    await run("qemu-img", ["convert", "-c", "-O", "qcow2", raw, `${disk}.partial`]);
    await rename(`${disk}.partial`, disk);
    return disk;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
