import type { FormProblem } from "../../lib/vm-form";

// The problems with one field or a group of controls (a table of disks),
// under it, in words; the API's field on hover, when the server named one.

export function Problems({ id, errors }: { id?: string; errors: FormProblem[] | undefined }) {
  if (!errors?.length) return null;
  return (
    <p id={id} className="error" role="alert">
      {errors.map((e) => (
        <span key={e.message} title={e.path ? `API field: ${e.path}` : undefined} data-path={e.path || undefined}>
          {e.message}.{" "}
        </span>
      ))}
    </p>
  );
}
