import { z } from "zod";

// Turns a zod schema into the structural OpenAPI v3 schema a
// CustomResourceDefinition needs: zod's own JSON Schema output, reshaped
// where Kubernetes' structural rules differ from plain JSON Schema.

export type OpenApiSchema = Record<string, unknown>;

/** Formats the API server understands; zod's others (e.g. safeint) are dropped. */
const KNOWN_FORMATS = new Set([
  "int32",
  "int64",
  "float",
  "double",
  "byte",
  "date",
  "date-time",
  "uri",
  "email",
  "uuid",
]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function reshape(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(reshape);
  if (!isRecord(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    // JSON Schema's own keywords the API server does not take; a property that happens to bear one of their names
    // stays.
    if (key === "$schema" || key === "propertyNames" || key === "id") continue;
    out[key] =
      key === "properties" && isRecord(value)
        ? Object.fromEntries(Object.entries(value).map(([name, property]) => [name, reshape(property)]))
        : reshape(value);
  }
  if (out["x-kubernetes-int-or-string"] === true) {
    // The only form of int-or-string a structural schema accepts.
    const { description, pattern } = out;
    return {
      ...(description === undefined ? {} : { description }),
      anyOf: [{ type: "integer" }, { type: "string" }],
      ...(pattern === undefined ? {} : { pattern }),
      "x-kubernetes-int-or-string": true,
    };
  }
  if (out["x-kubernetes-preserve-unknown-fields"] === true || out.additionalProperties === false) {
    delete out.additionalProperties;
  }
  if (isRecord(out.additionalProperties) && Object.keys(out.additionalProperties).length === 0) {
    // A map of anything: keep its content as it is rather than pruning it.
    delete out.additionalProperties;
    out["x-kubernetes-preserve-unknown-fields"] = true;
  }
  if ("const" in out) {
    out.enum = [out.const];
    delete out.const;
  }
  if (typeof out.format === "string" && !KNOWN_FORMATS.has(out.format)) delete out.format;
  if (out.type === "integer") {
    if (out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
    if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  }
  if (out.type === "number") {
    // zod bounds plain numbers by the float64 range; the API server needs no bounds.
    if (typeof out.minimum === "number" && out.minimum <= -Number.MAX_VALUE) delete out.minimum;
    if (typeof out.maximum === "number" && out.maximum >= Number.MAX_VALUE) delete out.maximum;
  }
  return out;
}

export function toStructuralSchema(schema: z.ZodType): OpenApiSchema {
  const jsonSchema = z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", unrepresentable: "any" });
  return reshape(jsonSchema) as OpenApiSchema;
}
