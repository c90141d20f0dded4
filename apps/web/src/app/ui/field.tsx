import type { ReactNode } from "react";
import type { FormProblem } from "../../lib/vm-form";
import { Problems } from "./problems";

// One field of a form: its label, a hint, the problems with it in words (the
// API's path on hover) and a warning, tied to the control for screen readers.

export function Field({
  id,
  label,
  hint,
  errors,
  warning,
  children,
}: {
  id: string;
  label: string;
  hint?: string;
  errors?: FormProblem[] | undefined;
  warning?: string | undefined;
  children: (describedBy: string | undefined, invalid: boolean) => ReactNode;
}) {
  const describedBy =
    [hint ? `${id}-hint` : "", errors?.length ? `${id}-error` : "", warning ? `${id}-warning` : ""]
      .filter(Boolean)
      .join(" ") || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p id={`${id}-hint`} className="hint">
          {hint}
        </p>
      )}
      {children(describedBy, Boolean(errors?.length))}
      <Problems id={`${id}-error`} errors={errors} />
      {warning && (
        <p id={`${id}-warning`} className="warning" role="status">
          {warning}
        </p>
      )}
    </div>
  );
}
