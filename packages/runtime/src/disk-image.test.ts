import { describe, expect, it } from "vitest";
import { ImageRefused, checkSelfContained, imagePath } from "./disk-image.ts";

const info = (rest: object) => ({ format: "qcow2", filename: "/data/disk.img", "virtual-size": 1024, ...rest });

describe("checkSelfContained", () => {
  it("takes a qcow2 and a raw image that name no other file, and a vmdk whose one extent is itself", () => {
    expect(() => {
      checkSelfContained(info({ "format-specific": { type: "qcow2", data: {} } }));
    }).not.toThrow();
    expect(() => {
      checkSelfContained(info({ format: "raw" }));
    }).not.toThrow();
    expect(() => {
      checkSelfContained(
        info({
          format: "vmdk",
          "format-specific": { type: "vmdk", data: { extents: [{ filename: "/data/disk.img" }] } },
        }),
      );
    }).not.toThrow();
  });

  it("refuses a backing file, a data file, an extent elsewhere and a format not taken, each by name", () => {
    expect(() => {
      checkSelfContained(info({ "full-backing-filename": "/etc/shadow" }));
    }).toThrow("the image has a backing file (/etc/shadow)");
    expect(() => {
      checkSelfContained(info({ "format-specific": { type: "qcow2", data: { "data-file": "nbd://10.0.0.1" } } }));
    }).toThrow("the qcow2 image has an external data file (nbd://10.0.0.1)");
    expect(() => {
      checkSelfContained(
        info({
          format: "vmdk",
          "format-specific": {
            type: "vmdk",
            data: { extents: [{ filename: "/data/disk.img" }, { filename: "/dev/sda" }] },
          },
        }),
      );
    }).toThrow("the vmdk image has an extent in another file (/dev/sda)");
    expect(() => {
      checkSelfContained(info({ format: "vmdk" }), ["qcow2", "raw"]);
    }).toThrow("the image's format is vmdk, which is not taken here (only qcow2, raw)");
  });
});

describe("imagePath", () => {
  it("makes a path absolute, so that a name with a colon is never read as a protocol", () => {
    expect(imagePath("nbd:10.0.0.1:10809")).toMatch(/^\/.*\/nbd:10\.0\.0\.1:10809$/);
  });

  it("refuses a json: name", () => {
    expect(() => imagePath('/source/json:{"driver":"nbd"}')).toThrow(ImageRefused);
  });
});
