// The "newc" cpio format the Linux kernel unpacks an initramfs from, written
// directly: no cpio program needed, and the same files always give the same
// bytes (fixed times and owners).

export type CpioEntry =
  | { path: string; type: "directory"; mode?: number }
  | { path: string; type: "file"; data: Buffer; mode?: number }
  | { path: string; type: "symlink"; target: string };

const hex = (n: number) => n.toString(16).padStart(8, "0");
const pad4 = (n: number) => (4 - (n % 4)) % 4;

function header(ino: number, mode: number, size: number, nameLength: number): string {
  // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check
  return [
    "070701",
    hex(ino),
    hex(mode),
    hex(0),
    hex(0),
    hex(1),
    hex(0),
    hex(size),
    hex(0),
    hex(0),
    hex(0),
    hex(0),
    hex(nameLength),
    hex(0),
  ].join("");
}

function record(ino: number, path: string, mode: number, data: Buffer): Buffer {
  const name = Buffer.from(`${path}\0`);
  const head = Buffer.from(header(ino, mode, data.length, name.length), "ascii");
  return Buffer.concat([
    head,
    name,
    Buffer.alloc(pad4(head.length + name.length)),
    data,
    Buffer.alloc(pad4(data.length)),
  ]);
}

export function cpioArchive(entries: CpioEntry[]): Buffer {
  const records = entries.map((entry, i) => {
    const ino = i + 1;
    switch (entry.type) {
      case "directory":
        return record(ino, entry.path, 0o040000 | (entry.mode ?? 0o755), Buffer.alloc(0));
      case "file":
        return record(ino, entry.path, 0o100000 | (entry.mode ?? 0o644), entry.data);
      case "symlink":
        return record(ino, entry.path, 0o120777, Buffer.from(entry.target));
    }
  });
  return Buffer.concat([...records, record(0, "TRAILER!!!", 0, Buffer.alloc(0))]);
}
