"use client";

// The name of a VM about to be made from this one (restored from a snapshot, or cloned): what is wrong with it as it
// is typed (newVmNameProblem), else what the new VM will be.

export function NewVmNameField({
  id,
  value,
  problem,
  hint,
  onChange,
}: {
  /** The input's id; its hint's is `<id>-hint`. */
  id: string;
  value: string;
  problem: string | undefined;
  hint: string;
  onChange: (value: string) => void;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>New VM name</label>
      <input
        id={id}
        value={value}
        autoComplete="off"
        aria-invalid={problem !== undefined}
        aria-describedby={`${id}-hint`}
        onChange={(e) => {
          onChange(e.target.value);
        }}
      />
      <p id={`${id}-hint`} className={problem ? "error" : "hint"}>
        {problem ?? hint}
      </p>
    </div>
  );
}
