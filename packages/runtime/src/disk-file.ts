import { constants } from "node:fs";
import type { Stats } from "node:fs";
import { lstat, open } from "node:fs/promises";

// Disk image files on volumes others write to too (a claim): never a link
// followed, never an existing file taken for a new one. Shared by the
// launcher, which makes and grows a claim's disk.img, and the importer,
// which fills one.

/** What is at the path, without following a symlink: undefined when nothing is (only ENOENT means absent). */
export function entryAt(path: string): Promise<Stats | undefined> {
  return lstat(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  });
}

/** Makes a sparse file of the size: O_EXCL, so made here and never an existing file or link; O_NOFOLLOW. */
export async function createSparseFile(path: string, bytes: number): Promise<void> {
  const file = await open(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o660,
  );
  try {
    await file.truncate(bytes);
  } finally {
    await file.close();
  }
}

/**
 * Grows the regular file at the path to the size (never shrinks it), through the file opened without following links;
 * with `sync`, makes it durable too. Returns false when what is there is no regular file (nothing is changed then).
 */
export async function growFile(path: string, bytes: number, options: { sync?: boolean } = {}): Promise<boolean> {
  const file = await open(path, constants.O_RDWR | constants.O_NOFOLLOW);
  try {
    const stats = await file.stat();
    if (!stats.isFile()) return false;
    if (stats.size < bytes) await file.truncate(bytes);
    if (options.sync) await file.sync();
    return true;
  } finally {
    await file.close();
  }
}
