import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { renderCrdFiles, renderOptionalCrdFiles } from "./crds.ts";

/** Where the chart keeps the CRDs; Helm installs them before anything else. */
export const CRD_DIR = fileURLToPath(new URL("../../../../charts/kubevirt-ts/crds/", import.meta.url));

/** Plain YAML: a schema shared by two versions is written out twice, not as an anchor and an alias. */
const toYaml = (value: unknown) => stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });

export function renderCrdYamlFiles(): Map<string, string> {
  return renderCrdFiles(toYaml);
}

/** Where the chart keeps the CRDs it installs only when no one else serves them (CDI's DataVolume). */
export const OPTIONAL_CRD_DIR = fileURLToPath(new URL("../../../../charts/kubevirt-ts/files/crds/", import.meta.url));

export function renderOptionalCrdYamlFiles(): Map<string, string> {
  return renderOptionalCrdFiles(toYaml);
}
