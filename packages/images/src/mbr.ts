// A DOS (MBR) partition table, written into the first sector of a disk image
// without fdisk: four 16-byte entries at byte 446 and the 0x55AA signature.
// Addresses are LBA; the CHS fields hold the "beyond 8 GiB" marker every
// modern reader ignores.

export const SECTOR = 512;

export interface MbrPartition {
  /** The partition's type byte, e.g. 0x0e (FAT16, LBA) or 0x83 (Linux). */
  type: number;
  startSector: number;
  sectors: number;
  bootable?: boolean;
}

/** The partition table and signature to put at bytes 446–511 of the first sector. */
export function mbrPartitionTable(partitions: MbrPartition[]): Buffer {
  if (partitions.length > 4) throw new Error(`an MBR holds at most 4 partitions, not ${String(partitions.length)}`);
  const table = Buffer.alloc(66);
  for (const [i, p] of partitions.entries()) {
    if (p.startSector < 1 || p.sectors < 1 || p.startSector + p.sectors > 2 ** 32)
      throw new Error(`partition ${String(i + 1)} lies outside what an MBR can address`);
    const entry = i * 16;
    table[entry] = p.bootable ? 0x80 : 0x00;
    table.set([0xfe, 0xff, 0xff], entry + 1);
    table[entry + 4] = p.type;
    table.set([0xfe, 0xff, 0xff], entry + 5);
    table.writeUInt32LE(p.startSector, entry + 8);
    table.writeUInt32LE(p.sectors, entry + 12);
  }
  table[64] = 0x55;
  table[65] = 0xaa;
  return table;
}
