import { RUN_STRATEGIES } from "@kubevirt-ts/kubevirt-api";
import type { FormProblem } from "../../lib/vm-form";
import { Field } from "./field";

// The fields the create and the edit form share: the size (an instancetype,
// or CPU cores and memory), the guest OS preference and the run strategy.

type Shared = "size" | "cpu" | "memory" | "preference" | "runStrategy";

/** The cluster's instancetypes and preferences, as the API lists them. */
export interface Catalog {
  sizes: { name: string; cpu: number; memory: string }[];
  preferences: { name: string; displayName: string }[];
}

interface Props {
  /** Each field's id is `<prefix>-<field>`. */
  prefix: string;
  values: Record<Shared, string>;
  onChange: (field: Shared, value: string) => void;
  errors: Partial<Record<Shared, FormProblem[]>>;
  catalog: Catalog | undefined;
}

/** An option for a value the VM names that the cluster does not list (a namespaced instancetype, one deleted since). */
const own = (value: string, listed: { name: string }[] | undefined) =>
  value !== "" && !listed?.some((x) => x.name === value) ? <option value={value}>{value}</option> : null;

/** The size: one of the cluster's instancetypes, or CPU cores and memory of the VM's own. */
export function SizeFields({
  prefix,
  values,
  onChange,
  errors,
  catalog,
  warnings = {},
  memoryNote = "",
}: Props & { warnings?: { size?: string | undefined; memory?: string | undefined }; memoryNote?: string }) {
  return (
    <>
      <Field
        id={`${prefix}-size`}
        label="Size"
        hint={
          "An instancetype of the cluster (u1: general purpose, o1: memory overcommitted), " +
          "or your own CPU and memory."
        }
        errors={errors.size}
        warning={warnings.size}
      >
        {(d, invalid) => (
          <select
            id={`${prefix}-size`}
            value={values.size}
            onChange={(e) => {
              onChange("size", e.target.value);
            }}
            aria-describedby={d}
            aria-invalid={invalid}
          >
            <option value="">Custom: CPU cores and memory below</option>
            {own(values.size, catalog?.sizes)}
            {(catalog?.sizes ?? []).map((i) => (
              <option key={i.name} value={i.name}>
                {i.name}: {i.cpu} vCPU, {i.memory}
              </option>
            ))}
          </select>
        )}
      </Field>
      {values.size === "" && (
        <>
          <Field id={`${prefix}-cpu`} label="CPU cores" errors={errors.cpu}>
            {(d, invalid) => (
              <input
                id={`${prefix}-cpu`}
                type="number"
                min={1}
                max={64}
                value={values.cpu}
                onChange={(e) => {
                  onChange("cpu", e.target.value);
                }}
                aria-describedby={d}
                aria-invalid={invalid}
              />
            )}
          </Field>
          <Field
            id={`${prefix}-memory`}
            label="Memory"
            hint={`A Kubernetes quantity, such as 512Mi or 2Gi.${memoryNote}`}
            errors={errors.memory}
            warning={warnings.memory}
          >
            {(d, invalid) => (
              <input
                id={`${prefix}-memory`}
                value={values.memory}
                onChange={(e) => {
                  onChange("memory", e.target.value);
                }}
                aria-describedby={d}
                aria-invalid={invalid}
              />
            )}
          </Field>
        </>
      )}
    </>
  );
}

/** The guest OS: one of the cluster's preferences, or none. */
export function PreferenceField({ prefix, values, onChange, errors, catalog }: Props) {
  return (
    <Field
      id={`${prefix}-preference`}
      label="Guest OS"
      hint={
        "A preference of the cluster: the devices and firmware the guest's OS prefers, " + "and the least it needs."
      }
      errors={errors.preference}
    >
      {(d, invalid) => (
        <select
          id={`${prefix}-preference`}
          value={values.preference}
          onChange={(e) => {
            onChange("preference", e.target.value);
          }}
          aria-describedby={d}
          aria-invalid={invalid}
        >
          <option value="">No preference</option>
          {own(values.preference, catalog?.preferences)}
          {(catalog?.preferences ?? []).map((p) => (
            <option key={p.name} value={p.name}>
              {p.displayName} ({p.name})
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

export function RunStrategyField({ prefix, values, onChange, errors }: Omit<Props, "catalog">) {
  return (
    <Field
      id={`${prefix}-run-strategy`}
      label="Run strategy"
      hint="Always keeps it running; Halted keeps it stopped; Manual leaves it to Start and Stop."
      errors={errors.runStrategy}
    >
      {(d, invalid) => (
        <select
          id={`${prefix}-run-strategy`}
          value={values.runStrategy}
          onChange={(e) => {
            onChange("runStrategy", e.target.value);
          }}
          aria-describedby={d}
          aria-invalid={invalid}
        >
          {RUN_STRATEGIES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** The problems that concern no one field (a name taken, a conflict), above the form. */
export function FormErrors({ errors }: { errors: FormProblem[] | undefined }) {
  if (!errors?.length) return null;
  return (
    <div className="error" role="alert">
      {errors.map((m) => (
        <p key={m.message} title={m.path ? `API field: ${m.path}` : undefined}>
          {m.message}
        </p>
      ))}
    </div>
  );
}
