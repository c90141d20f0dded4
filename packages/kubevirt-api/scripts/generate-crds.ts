// Writes the generated CRDs into the Helm chart: `npm run generate`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CRD_DIR, OPTIONAL_CRD_DIR, renderCrdYamlFiles, renderOptionalCrdYamlFiles } from "../src/crd/files.ts";

for (const [dir, files] of [
  [CRD_DIR, renderCrdYamlFiles()],
  [OPTIONAL_CRD_DIR, renderOptionalCrdYamlFiles()],
] as const) {
  mkdirSync(dir, { recursive: true });
  for (const [file, content] of files) {
    writeFileSync(join(dir, file), content);
    console.log(`wrote ${join(dir, file)}`);
  }
}
