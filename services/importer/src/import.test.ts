import { describe, expect, it } from "vitest";
import { ImportError, checkFits } from "./import.ts";

describe("checkFits", () => {
  it("takes an image no larger than the disk asked for", () => {
    expect(() => {
      checkFits({ "virtual-size": 1024 ** 3 }, 1024 ** 3);
    }).not.toThrow();
  });

  it("refuses a larger image, saying how large a disk to ask for", () => {
    expect(() => {
      checkFits({ "virtual-size": 3 * 1024 ** 3 + 1 }, 2 * 1024 ** 3);
    }).toThrow(ImportError);
    expect(() => {
      checkFits({ "virtual-size": 3 * 1024 ** 3 + 1 }, 2 * 1024 ** 3);
    }).toThrow(/larger than the disk asked for, 2.00 GiB: ask for at least 4Gi/);
  });
});
