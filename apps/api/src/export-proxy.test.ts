import { describe, expect, it } from "vitest";
import { isExportProxyPath, parseExportPath } from "./export-proxy.ts";

describe("parseExportPath", () => {
  it("reads KubeVirt's external link: the namespace, the export and the export server's path", () => {
    expect(
      parseExportPath("/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e/volumes/root/disk.img.gz"),
    ).toEqual({ namespace: "ns", name: "e", rest: "/volumes/root/disk.img.gz" });
    expect(
      parseExportPath("/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e/external/manifests/all"),
    ).toMatchObject({ rest: "/external/manifests/all" });
  });

  it("refuses what is not an export link, or names no Kubernetes object", () => {
    expect(() => parseExportPath("/api/export.kubevirt.io/v2/namespaces/ns/virtualmachineexports/e/x")).toThrow(
      /not an export link/,
    );
    expect(() => parseExportPath("/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e")).toThrow(
      /not an export link/,
    );
    expect(() => parseExportPath("/api/export.kubevirt.io/v1/namespaces/NS_1/virtualmachineexports/e/x")).toThrow(
      /not a Kubernetes name/,
    );
  });

  it("takes only the export proxy's paths", () => {
    expect(isExportProxyPath("/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e/x")).toBe(true);
    expect(isExportProxyPath("/v1beta1/upload")).toBe(false);
  });
});
