// Writes the generated CRDs into the Helm chart: `npm run generate`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CRD_DIR, renderCrdYamlFiles } from "../src/crd/files.ts";

mkdirSync(CRD_DIR, { recursive: true });
for (const [file, content] of renderCrdYamlFiles()) {
  writeFileSync(join(CRD_DIR, file), content);
  console.log(`wrote ${join(CRD_DIR, file)}`);
}
