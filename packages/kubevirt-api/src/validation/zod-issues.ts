import type { z } from "zod";
import { type Cause, CauseType, joinPath } from "./causes.ts";

// Turns zod's issues into causes whose messages say, in words, which field is
// wrong and how to fix it.

function describeExpected(expected: string): string {
  return expected === "int" ? "an integer" : `a ${expected}`;
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function issueToCauses(issue: z.core.$ZodIssue, base: readonly PropertyKey[]): Cause[] {
  const path = [...base, ...issue.path];
  const field = joinPath(path);
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((key) => {
        const keyField = joinPath([...path, key]);
        return {
          reason: CauseType.NotSupported,
          field: keyField,
          message:
            `${keyField} is not a field kubevirt-ts supports (yet); remove it, or see the ` +
            "supported fields with `kubectl explain`",
        };
      });
    case "invalid_type":
      if (issue.input === undefined) {
        return [{ reason: CauseType.Required, field, message: `${field} is required` }];
      }
      return [
        {
          reason: CauseType.Invalid,
          field,
          message: `${field} must be ${describeExpected(issue.expected)}, not ${typeOf(issue.input)}`,
        },
      ];
    case "invalid_value":
      return [
        {
          reason: CauseType.NotSupported,
          field,
          message:
            `${field} has the unsupported value ${JSON.stringify(issue.input)}; use one ` +
            `of: ${issue.values.map(String).join(", ")}`,
        },
      ];
    case "invalid_union":
      // Quantities are the only unions: a string or a number.
      return [
        { reason: CauseType.Invalid, field, message: `${field} must be a Kubernetes quantity such as 128Mi or 2Gi` },
      ];
    default:
      return [{ reason: CauseType.Invalid, field, message: `${field} ${issue.message}` }];
  }
}

export function zodIssuesToCauses(error: z.ZodError, base: readonly PropertyKey[] = []): Cause[] {
  return error.issues.flatMap((issue) => issueToCauses(issue, base));
}
