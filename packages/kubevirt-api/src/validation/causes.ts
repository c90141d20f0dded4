// What validation reports: one cause per problem, shaped like the causes of a
// Kubernetes Status (metav1.StatusCause), so the admission webhook can return
// them as they are and clients can show each next to the field it concerns.

export const CauseType = {
  Required: "FieldValueRequired",
  Invalid: "FieldValueInvalid",
  NotSupported: "FieldValueNotSupported",
  Duplicate: "FieldValueDuplicate",
  NotFound: "FieldValueNotFound",
} as const;
export type CauseType = (typeof CauseType)[keyof typeof CauseType];

export interface Cause {
  /** The path of the field, e.g. `spec.template.spec.domain.devices.disks[0].name`. */
  field: string;
  /** A sentence that names the field, says what is wrong and what to do. */
  message: string;
  reason: CauseType;
}

export type Validation<T> = { ok: true; value: T } | { ok: false; causes: Cause[] };

/** Collects causes for one object; every message starts with the field path. */
export class Causes {
  readonly list: Cause[] = [];

  add(reason: CauseType, field: string, problem: string): void {
    this.list.push({ reason, field, message: `${field} ${problem}` });
  }
  required(field: string, problem: string): void {
    this.add(CauseType.Required, field, problem);
  }
  invalid(field: string, problem: string): void {
    this.add(CauseType.Invalid, field, problem);
  }
  notSupported(field: string, problem: string): void {
    this.add(CauseType.NotSupported, field, problem);
  }
  duplicate(field: string, problem: string): void {
    this.add(CauseType.Duplicate, field, problem);
  }
  notFound(field: string, problem: string): void {
    this.add(CauseType.NotFound, field, problem);
  }
}

/** Formats a path from its segments: `spec.volumes[0].name`. */
export function joinPath(segments: readonly PropertyKey[]): string {
  let path = "";
  for (const segment of segments) {
    if (typeof segment === "number") path += `[${segment}]`;
    else path += path === "" ? String(segment) : `.${String(segment)}`;
  }
  return path;
}

/** One line for logs and errors: "a; b; c". */
export function summarize(causes: readonly Cause[]): string {
  return causes.map((c) => c.message).join("; ");
}
