import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { instancetypeSpec, preferenceSpec } from "../schema/instancetype.ts";
import { migrationSpec } from "../schema/migration.ts";
import { migrationPolicySpec } from "../schema/migration-policy.ts";
import { kubeVirtSpec } from "../schema/kubevirt.ts";
import { vmSpec } from "../schema/vm.ts";
import { vmiSpec } from "../schema/vmi.ts";
import { FIELD_EFFECTS, type TestRef, VM_TEMPLATE_SPEC } from "../../test/field-effects.ts";
import { type OpenApiSchema, toStructuralSchema } from "./openapi.ts";

// No field is accepted without effect: every leaf of the schemas the CRDs
// are built from has an entry in FIELD_EFFECTS, and every test an entry
// names is there to be run.

const REPO_ROOT = new URL("../../../../", import.meta.url);

function isSchema(value: unknown): value is OpenApiSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The paths of a structural schema's leaves: nodes with no properties to descend into (scalars, maps, empty objects).
 */
function leaves(node: OpenApiSchema, path: string): string[] {
  if (node.type === "array") {
    if (!isSchema(node.items)) throw new Error(`${path} is an array without an items schema`);
    return leaves(node.items, `${path}[]`);
  }
  const properties = isSchema(node.properties) ? Object.entries(node.properties) : [];
  if (properties.length === 0) return [path];
  return properties.flatMap(([name, child]) => {
    if (!isSchema(child)) throw new Error(`${path}.${name} has no schema`);
    return leaves(child, `${path}.${name}`);
  });
}

const allLeaves = new Set([
  ...leaves(toStructuralSchema(vmSpec), "spec"),
  // A VMI's spec.X is listed once, as the VM template's spec.template.spec.X.
  ...leaves(toStructuralSchema(vmiSpec), VM_TEMPLATE_SPEC),
  ...leaves(toStructuralSchema(instancetypeSpec), "instancetype:spec"),
  ...leaves(toStructuralSchema(preferenceSpec), "preference:spec"),
  ...leaves(toStructuralSchema(migrationSpec), "migration:spec"),
  ...leaves(toStructuralSchema(migrationPolicySpec), "migrationpolicy:spec"),
  ...leaves(toStructuralSchema(kubeVirtSpec), "kubevirt:spec"),
]);

describe("the registry of field effects", () => {
  it("has an entry for every leaf the CRDs accept", () => {
    const missing = [...allLeaves].filter((path) => !(path in FIELD_EFFECTS));
    expect(missing, "add these to FIELD_EFFECTS in field-effects.ts").toEqual([]);
  });

  it("has no entry for a path that is not a leaf (any more)", () => {
    expect(Object.keys(FIELD_EFFECTS).filter((path) => !allLeaves.has(path))).toEqual([]);
  });

  it("names tests that exist, by text of their titles in their files", () => {
    const files = new Map<string, string | undefined>();
    const read = (file: string) => {
      if (!files.has(file)) {
        const url = new URL(file, REPO_ROOT);
        // A title the formatter split into "a " + "b" reads as one.
        const text = existsSync(url) ? readFileSync(url, "utf8").replace(/(["`])\s*\+\s*\n?\s*\1/g, "") : undefined;
        files.set(file, text);
      }
      return files.get(file);
    };
    const refs = Object.entries(FIELD_EFFECTS).map(([path, entry]): [string, TestRef] => [
      path,
      "effect" in entry ? entry.effect : entry.refused,
    ]);
    const broken = refs.flatMap(([path, { file, test }]) => {
      const text = read(file);
      if (text === undefined) return [`${path}: no file ${file}`];
      return text.includes(test) ? [] : [`${path}: no test "${test}" in ${file}`];
    });
    expect(broken).toEqual([]);
  });
});
