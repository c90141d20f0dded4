import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CRD_DIR, renderCrdYamlFiles } from "./files.ts";

describe("generated CRDs", () => {
  const generated = renderCrdYamlFiles();

  it("are committed exactly as the generator writes them (run `npm run generate` after changing a schema)", () => {
    const committed = readdirSync(CRD_DIR).filter((f) => f.endsWith(".yaml")).sort();
    expect(committed).toEqual([...generated.keys()].sort());
    for (const [file, content] of generated) {
      expect(readFileSync(join(CRD_DIR, file), "utf8"), file).toBe(content);
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
