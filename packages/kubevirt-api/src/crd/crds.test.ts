import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPRECATED_VERSION } from "../constants.ts";
import { virtualMachineCrd, virtualMachineInstanceCrd, virtualMachineInstanceMigrationCrd } from "./crds.ts";
import { CRD_DIR, OPTIONAL_CRD_DIR, renderCrdYamlFiles, renderOptionalCrdYamlFiles } from "./files.ts";

describe("generated CRDs", () => {
  const generated = renderCrdYamlFiles();

  it.each([
    [CRD_DIR, generated],
    [OPTIONAL_CRD_DIR, renderOptionalCrdYamlFiles()],
  ])(
    "are committed exactly as the generator writes them in %s (run `npm run generate` after changing a schema)",
    (dir, files) => {
      const committed = readdirSync(dir)
        .filter((f) => f.endsWith(".yaml"))
        .sort();
      expect(committed).toEqual([...files.keys()].sort());
      for (const [file, content] of files) {
        expect(readFileSync(join(dir, file), "utf8"), file).toBe(content);
      }
    },
  );

  it("keep a property whose name is a JSON Schema keyword, as guestOSInfo.id", () => {
    const vmi = generated.get("kubevirt.io_virtualmachineinstances.yaml") ?? "";
    expect(vmi).toMatch(/guestOSInfo:\n\s+type: object\n\s+properties:\n\s+id:\n\s+type: string/);
  });

  it("contain no references, which structural schemas forbid", () => {
    for (const content of generated.values()) expect(content).not.toMatch(/\$ref|\$defs|additionalProperties: false/);
  });

  it.each([virtualMachineCrd, virtualMachineInstanceCrd, virtualMachineInstanceMigrationCrd])(
    "serve kubevirt.io/v1alpha3 as KubeVirt does: deprecated, not stored, v1's schema and columns",
    (crd) => {
      const [v1, v1alpha3, ...more] = (crd as { spec: { versions: Record<string, unknown>[] } }).spec.versions;
      expect(more).toEqual([]);
      expect(v1).toMatchObject({ name: "v1", served: true, storage: true });
      expect(v1).not.toHaveProperty("deprecated");
      expect(v1alpha3).toMatchObject({
        name: "v1alpha3",
        served: true,
        storage: false,
        deprecated: true,
        deprecationWarning: "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release.",
      });
      expect(DEPRECATED_VERSION.warning).toBe(v1alpha3?.deprecationWarning);
      const properties = (v: Record<string, unknown> | undefined) =>
        (v as { schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }).schema.openAPIV3Schema
          .properties;
      // The same schema but for apiVersion's description, which names the version.
      const withoutApiVersion = (v: Record<string, unknown> | undefined) =>
        Object.fromEntries(Object.entries(properties(v)).filter(([key]) => key !== "apiVersion"));
      expect(withoutApiVersion(v1alpha3)).toEqual(withoutApiVersion(v1));
      expect(v1alpha3?.additionalPrinterColumns).toEqual(v1?.additionalPrinterColumns);
      expect(v1alpha3?.subresources).toEqual(v1?.subresources);
    },
  );
});
