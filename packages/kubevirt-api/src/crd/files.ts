import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { renderCrdFiles } from "./crds.ts";

/** Where the chart keeps the CRDs; Helm installs them before anything else. */
export const CRD_DIR = fileURLToPath(new URL("../../../../charts/kubevirt-ts/crds/", import.meta.url));

export function renderCrdYamlFiles(): Map<string, string> {
  return renderCrdFiles((value) => stringify(value, { lineWidth: 0 }));
}
