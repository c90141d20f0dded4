import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CRD_DIR, OPTIONAL_CRD_DIR, renderCrdYamlFiles, renderOptionalCrdYamlFiles } from "./files.ts";

describe("generated CRDs", () => {
  const generated = renderCrdYamlFiles();

  it.each([
    [CRD_DIR, generated],
    [OPTIONAL_CRD_DIR, renderOptionalCrdYamlFiles()],
  ])("are committed exactly as the generator writes them in %s (run `npm run generate` after changing a schema)", (dir, files) => {
    const committed = readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
    expect(committed).toEqual([...files.keys()].sort());
    for (const [file, content] of files) {
      expect(readFileSync(join(dir, file), "utf8"), file).toBe(content);
    }
  });

  it("keep a property whose name is a JSON Schema keyword, as guestOSInfo.id", () => {
    const vmi = generated.get("kubevirt.io_virtualmachineinstances.yaml") ?? "";
    expect(vmi).toMatch(/guestOSInfo:\n\s+type: object\n\s+properties:\n\s+id:\n\s+type: string/);
  });

  it("contain no references, which structural schemas forbid", () => {
    for (const content of generated.values()) expect(content).not.toMatch(/\$ref|\$defs|additionalProperties: false/);
  });
});
