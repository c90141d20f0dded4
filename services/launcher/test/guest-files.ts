import { chmod, chown, copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TinyGuest, buildTinyGuest } from "@kubevirt-ts/images";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";

// A folder the launcher's user (the qemu user, 107) owns, with the tiny
// guest's kernel and initrd in it: that user cannot read root's cache.

export interface GuestFolder {
  dir: string;
  guest: TinyGuest;
  kernel: string;
  initrd: string;
}

export async function guestFolder(): Promise<GuestFolder> {
  const guest = await buildTinyGuest();
  const dir = await mkdtemp(join(tmpdir(), "kubevirt-ts-launcher-"));
  await chmod(dir, 0o755);
  const kernelDir = join(dir, "kernel-boot");
  await mkdir(kernelDir);
  for (const path of [dir, kernelDir]) await chown(path, LAUNCHER_UID, LAUNCHER_UID);
  const kernel = join(kernelDir, "vmlinuz");
  const initrd = join(kernelDir, "initrd.gz");
  await copyFile(guest.kernel, kernel);
  await copyFile(guest.initrd, initrd);
  for (const path of [kernel, initrd]) await chown(path, LAUNCHER_UID, LAUNCHER_UID);
  return { dir, guest, kernel, initrd };
}

/**
 * Removes a guest folder once its launcher is gone. A daemon's last files (libvirt's run directory) may still go while
 * the folder is removed (ENOTEMPTY): the removal is tried again a few times.
 */
export async function removeGuestFolder(folder: Pick<GuestFolder, "dir">): Promise<void> {
  await rm(folder.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
}
