import { stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import { createSparseFile, entryAt, growFile } from "@kubevirt-ts/runtime";
import { CLAIM_DISK_FILE, MIB, alignDownToMiB, diskBytesOnClaim } from "@kubevirt-ts/vm-rules";
import { type VolumeStatus, parseQuantity } from "@kubevirt-ts/kubevirt-api";

// The disk on a PersistentVolumeClaim, as KubeVirt's launcher and handler
// make it. A Block-mode claim is its device. A Filesystem-mode claim holds
// the raw image disk.img at its root: when it is absent, it is created
// sparse at the claim's size (its request, or its capacity when that is
// smaller), aligned down to 1 MiB; when the file system has less room,
// up to 10 % less is tolerated (KubeVirt's pvcTolerateLessSpaceUpToPercent)
// and the disk takes what there is. An image smaller than the claim allows
// (a claim grown since, an image imported smaller) is grown before the guest
// starts, leaving the claim's file-system overhead free; it never shrinks.

/**
 * KubeVirt's default share of a claim's size a disk image may fall short of it by (pvcTolerateLessSpaceUpToPercent).
 */
export const LESS_SPACE_TOLERATION_PERCENT = 10;
/** What KubeVirt leaves free on the file system whatever the disk's size (minimumReservePVCBytes). */
export const MINIMUM_RESERVE_BYTES = 131_072;

type ClaimInfo = NonNullable<VolumeStatus["persistentVolumeClaimInfo"]>;

/** The claim's size: its request, unless its capacity is smaller (or is all that is known). */
export function claimBytes(info: ClaimInfo): number | undefined {
  const quantity = (value: string | undefined) => (value === undefined ? undefined : parseQuantity(value));
  const requested = quantity(info.requests?.storage);
  const capacity = quantity(info.capacity?.storage);
  if (requested === undefined) return capacity;
  return capacity === undefined || capacity > requested ? requested : capacity;
}

export type DiskSize = { bytes: number; tolerated: boolean } | { error: string };

/** The size of a new disk.img on a claim whose file system has `availableBytes` free. */
export function newDiskSize(volume: string, info: ClaimInfo, availableBytes: number): DiskSize {
  const wanted = claimBytes(info);
  if (wanted === undefined)
    return {
      error:
        `volume ${volume}: the claim ${info.claimName ?? ""} reports no storage request or ` +
        "capacity, so the size of its disk is unknown",
    };
  const bytes = alignDownToMiB(wanted);
  if (bytes < MIB)
    return {
      error:
        `volume ${volume}: the claim ${info.claimName ?? ""} ` +
        `holds ${String(wanted)} bytes; a disk needs at least 1 MiB`,
    };
  const available = Math.max(0, availableBytes - MINIMUM_RESERVE_BYTES);
  if (bytes <= available) return { bytes, tolerated: false };
  const tolerated = (bytes * (100 - LESS_SPACE_TOLERATION_PERCENT)) / 100;
  if (tolerated > available) {
    return {
      error:
        `volume ${volume}: not enough space on the claim ${info.claimName ?? ""} for its ` +
        `disk: ${String(bytes)} bytes are asked for, ${String(available)} are free, also after ` +
        `tolerating ${String(LESS_SPACE_TOLERATION_PERCENT)} % less; free space on the volume or grow the ` +
        "claim",
    };
  }
  return { bytes: alignDownToMiB(available), tolerated: true };
}

/**
 * The size a disk image on the claim may be grown to: the claim's size less its file system's overhead, within the file
 * system.
 */
export function grownDiskSize(info: ClaimInfo, fileSystemBytes: number): number | undefined {
  const wanted = claimBytes(info);
  if (wanted === undefined) return undefined;
  return diskBytesOnClaim(Math.min(wanted, fileSystemBytes), info.filesystemOverhead);
}

export interface ClaimDisk {
  path: string;
  type: "file" | "block";
}

/** Whether anything is at the path; an error other than its absence is thrown, not taken for it. */
const exists = async (path: string) => (await entryAt(path)) !== undefined;

/**
 * The disk of a claim's volume: its device (Block mode) or its disk.img (Filesystem mode), made or grown as
 * KubeVirt does. `readOnly` claims are used as they are.
 */
export async function claimDisk(
  volume: string,
  info: ClaimInfo | undefined,
  dirs: { disks: string; devices: string },
  readOnly: boolean,
): Promise<ClaimDisk> {
  const device = join(dirs.devices, volume);
  if (info?.volumeMode === "Block" || (await exists(device))) {
    const found = await stat(device).catch(() => undefined);
    if (!found?.isBlockDevice())
      throw new Error(
        `volume ${volume}: the Block-mode claim ${info?.claimName ?? ""} is not a block device at ${device}`,
      );
    return { path: device, type: "block" };
  }
  const dir = join(dirs.disks, volume);
  if (!(await exists(dir)))
    throw new Error(`volume ${volume}: the claim ${info?.claimName ?? ""} is not mounted at ${dir}`);
  const path = join(dir, CLAIM_DISK_FILE);
  if (!info)
    throw new Error(
      `volume ${volume}: the VMI's status has no claim information for it ` +
        "(status.volumeStatus), so its disk's size is unknown",
    );
  const space = await statfs(dir);
  // Whoever else writes to the claim must not make the launcher (and QEMU) use another file: a symlink, a folder or a
  // device named disk.img is refused, and the file is opened without following links, as KubeVirt does.
  const entry = await entryAt(path);
  if (entry && !entry.isFile()) {
    throw new Error(
      `volume ${volume}: ${CLAIM_DISK_FILE} on the claim ${info.claimName ?? ""} ` +
        `is ${entry.isSymbolicLink() ? "a symbolic link" : "not a regular file"}; the disk must be a regular ` +
        "file at the claim's root",
    );
  }
  if (!entry) {
    if (readOnly)
      throw new Error(
        `volume ${volume}: the read-only claim ${info.claimName ?? ""} holds ` +
          `no ${CLAIM_DISK_FILE}; fill the claim with a disk image first`,
      );
    const size = newDiskSize(volume, info, space.bavail * space.bsize);
    if ("error" in size) throw new Error(size.error);
    // Sparse: only what the guest writes takes room.
    await createSparseFile(path, size.bytes);
    return { path, type: "file" };
  }
  const grown = grownDiskSize(info, space.blocks * space.bsize);
  if (!readOnly && grown !== undefined && grown > entry.size && !(await growFile(path, grown))) {
    throw new Error(`volume ${volume}: ${CLAIM_DISK_FILE} on the claim ${info.claimName ?? ""} is not a regular file`);
  }
  return { path, type: "file" };
}
