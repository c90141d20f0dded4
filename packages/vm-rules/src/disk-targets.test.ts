import { describe, expect, it } from "vitest";
import { diskSuffix, diskTargets } from "./disk-targets.ts";

describe("diskSuffix", () => {
  it.each([
    [0, "a"],
    [25, "z"],
    [26, "aa"],
    [27, "ab"],
    [701, "zz"],
    [702, "aaa"],
  ])("disk %d is %s", (index, suffix) => {
    expect(diskSuffix(index)).toBe(suffix);
  });
});

describe("diskTargets", () => {
  it("counts virtio disks and sata or scsi disks apart, in the VMI's order", () => {
    const targets = diskTargets({
      domain: {
        devices: {
          disks: [
            { name: "root", disk: { bus: "virtio" } },
            { name: "install", cdrom: {} },
            { name: "data", disk: { bus: "virtio" } },
            { name: "legacy", disk: {} },
            { name: "scsi", disk: { bus: "scsi" } },
          ],
        },
      },
    });
    expect(Object.fromEntries(targets)).toEqual({
      root: "vda",
      install: "sda",
      data: "vdb",
      legacy: "sdb",
      scsi: "sdc",
    });
  });
});
