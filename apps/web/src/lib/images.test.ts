import type { DataVolume } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { defaultUploadSize, imageNameFromFile, imageRow } from "./images";

const dv = (spec: DataVolume["spec"], status?: DataVolume["status"]): DataVolume => ({
  apiVersion: "cdi.kubevirt.io/v1beta1",
  kind: "DataVolume",
  metadata: { name: "disk" },
  spec,
  ...(status ? { status } : {}),
});

describe("imageRow", () => {
  it("says where an image came from, its size, and its state with progress while it fills", () => {
    expect(
      imageRow(
        dv(
          { source: { upload: {} }, storage: { resources: { requests: { storage: "2Gi" } } } },
          { phase: "UploadReady" },
        ),
      ),
    ).toMatchObject({ source: "Uploaded", size: "2Gi", state: "Waiting for an upload", ready: false });
    expect(
      imageRow(
        dv(
          { source: { http: { url: "https://x/d.qcow2" } }, storage: {} },
          { phase: "ImportInProgress", progress: "45.12%" },
        ),
      ).state,
    ).toBe("Importing (45.12%)");
    expect(
      imageRow(
        dv(
          { source: { pvc: { namespace: "ns", name: "golden" } }, pvc: {} },
          { phase: "Succeeded", progress: "100.0%" },
        ),
      ),
    ).toMatchObject({ source: "Copy of golden", state: "Ready", ready: true });
  });

  it("gives the reason an import keeps failing", () => {
    const failing = imageRow(
      dv(
        { source: { http: { url: "https://x/d" } }, storage: {} },
        {
          phase: "ImportInProgress",
          conditions: [{ type: "Running", status: "False", reason: "Error", message: "answered 404 Not Found" }],
        },
      ),
    );
    expect(failing.problem).toBe("answered 404 Not Found");
  });
});

describe("a new upload's defaults", () => {
  it("asks for the file's size in whole GiB, at least 1Gi, and names the image after the file", () => {
    expect(defaultUploadSize(1024)).toBe("1Gi");
    expect(defaultUploadSize(3 * 1024 ** 3 + 1)).toBe("4Gi");
    expect(imageNameFromFile("Debian_12.qcow2.gz")).toBe("debian-12");
    expect(imageNameFromFile("...iso")).toBe("image");
  });
});
