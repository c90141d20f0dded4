"use client";

import { type VirtualMachine, validateVirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { describeError, useTRPC } from "../../../../lib/trpc";
import {
  DISK_BUSES,
  type EditField,
  INTERFACE_MODELS,
  type VmEditForm,
  applyEdit,
  editCausesByField,
  editFormOf,
} from "../../../../lib/vm-edit";
import type { FormProblem } from "../../../../lib/vm-form";
import { Field } from "../../../ui/field";
import { Problems } from "../../../ui/problems";
import { FormErrors, PreferenceField, RunStrategyField, SizeFields } from "../../../ui/vm-fields";

// Editing a VM from a form, as the signed-in user: checked as you type with
// the server's rules (validateVirtualMachine) and the form's own (each line of
// labels or tolerations), sent as an update of the VM as the page holds it
// now. A change someone else made to its spec or metadata since the form
// opened stops the save, saying so, rather than being overwritten; one that
// lands between the save and the page's watch is a conflict (its
// resourceVersion). A running VM takes the change at its next start: the
// controller says RestartRequired.

type ByField = Partial<Record<EditField | "", FormProblem[]>>;

/** Devices of one kind (disks, network interfaces), each with one choice (its bus, its card), and their problems. */
function ChoiceTable({
  legend,
  columns,
  rows,
  options,
  choiceLabel,
  onPick,
  errors,
}: {
  legend: string;
  columns: [string, string, string];
  rows: { name: string; shown: string; value: string }[];
  options: (value: string) => { value: string; label: string }[];
  choiceLabel: (name: string) => string;
  onPick: (index: number, value: string) => void;
  errors: FormProblem[] | undefined;
}) {
  return (
    <fieldset className="field">
      <legend>{legend}</legend>
      <table className="disks">
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) => (
            <tr key={row.name}>
              <td>{row.name}</td>
              <td>{row.shown}</td>
              <td>
                <select
                  aria-label={choiceLabel(row.name)}
                  value={row.value}
                  onChange={(e) => {
                    onPick(i, e.target.value);
                  }}
                >
                  {options(row.value).map((o) => (
                    <option key={o.value} value={o.value}>
                      {o.label}
                    </option>
                  ))}
                </select>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Problems errors={errors} />
    </fieldset>
  );
}

export function EditVmForm({
  vm,
  running,
  onDone,
}: {
  vm: VirtualMachine;
  running: boolean;
  onDone: (saved: boolean) => void;
}) {
  const trpc = useTRPC();
  const namespace = vm.metadata.namespace ?? "";
  const name = vm.metadata.name ?? "";
  const instancetypes = useQuery(trpc.instancetypes.queryOptions());
  const update = useMutation(trpc.vms.update.mutationOptions());
  const [opened] = useState(vm);
  const [form, setForm] = useState<VmEditForm>(() => editFormOf(vm));
  const [touched, setTouched] = useState<Set<EditField>>(new Set());
  const [tried, setTried] = useState(false);
  const [serverErrors, setServerErrors] = useState<ByField>({});
  const change = (patch: Partial<VmEditForm>, field: EditField) => {
    setForm({ ...form, ...patch });
    setTouched(new Set(touched).add(field));
    setServerErrors({});
  };
  const set = (field: Exclude<EditField, "disks" | "interfaces">) => (e: { target: { value: string } }) => {
    change({ [field]: e.target.value }, field);
  };
  // The form's own problems, then the server's rules on the VM it makes, at every change.
  const { edited, local } = useMemo(() => {
    const { vm: next, problems } = applyEdit(vm, form);
    const found: ByField = {};
    for (const [field, messages] of Object.entries(problems) as [EditField, string[]][])
      found[field] = messages.map((message) => ({ message, path: "" }));
    const result = validateVirtualMachine(next);
    if (!result.ok)
      for (const [field, causes] of Object.entries(editCausesByField(result.causes)) as [
        EditField | "",
        FormProblem[],
      ][])
        (found[field] ??= []).push(...causes);
    return { edited: next, local: found };
  }, [vm, form]);
  const errors: ByField = { ...serverErrors };
  for (const [field, problems] of Object.entries(local) as [EditField | "", FormProblem[]][])
    if (tried || field === "" || touched.has(field)) errors[field] = [...(errors[field] ?? []), ...problems];

  async function submit(): Promise<void> {
    setTried(true);
    if (Object.keys(local).length > 0) return;
    const same = (a: unknown, b: unknown) => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
    if (
      vm.metadata.generation !== opened.metadata.generation ||
      !same(vm.metadata.labels, opened.metadata.labels) ||
      !same(vm.metadata.annotations, opened.metadata.annotations)
    ) {
      setServerErrors({
        "": [
          {
            message:
              `${name} was changed by someone else since this form opened: ` +
              "cancel, and edit again from its spec now.",
            path: "",
          },
        ],
      });
      return;
    }
    try {
      await update.mutateAsync({ namespace, name, vm: edited });
      onDone(true);
    } catch (error) {
      const { message, causes } = describeError(error);
      setServerErrors(causes.length > 0 ? editCausesByField(causes) : { "": [{ message, path: "" }] });
    }
  }

  // What the size, preference and run strategy fields share with the create form's.
  const shared = {
    prefix: "edit",
    values: form,
    onChange: (field: EditField, value: string) => {
      change({ [field]: value }, field);
    },
    errors,
    catalog: instancetypes.data,
  };

  const lines = (field: "labels" | "annotations" | "nodeSelector" | "tolerations", label: string, hint: string) => (
    <Field id={`edit-${field}`} label={label} hint={hint} errors={errors[field]}>
      {(d, invalid) => (
        <textarea
          id={`edit-${field}`}
          rows={Math.min(8, Math.max(2, form[field].split("\n").length + 1))}
          value={form[field]}
          onChange={set(field)}
          aria-describedby={d}
          aria-invalid={invalid}
          spellCheck={false}
        />
      )}
    </Field>
  );

  return (
    <form
      className="card"
      aria-label={`Edit ${name}`}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <h2>Edit {name}</h2>
      {running && (
        <p className="hint" data-testid="edit-running-note">
          {name} is running: what you change here takes effect when it restarts. Until then the VM says a restart is
          needed, and which changes wait for it.
        </p>
      )}
      <FormErrors errors={errors[""]} />
      {tried && Object.keys(local).length > 0 && (
        <p className="error" role="alert" data-testid="form-problems">
          {`Fix ${String(Object.values(local).flat().length)} problem(s) before saving; ` +
            "each is shown next to its field."}
        </p>
      )}
      <SizeFields {...shared} />
      <PreferenceField {...shared} />
      <RunStrategyField {...shared} />
      <ChoiceTable
        legend="Disks"
        columns={["Disk", "Attached as", "Bus"]}
        rows={form.disks.map((d) => ({ name: d.name, shown: d.kind, value: d.bus }))}
        options={(value) => [
          ...(value === "" ? [{ value: "", label: "default" }] : []),
          ...DISK_BUSES.map((b) => ({ value: b, label: b })),
        ]}
        choiceLabel={(disk) => `Bus of ${disk}`}
        onPick={(i, bus) => {
          change({ disks: form.disks.map((x, j) => (j === i ? { ...x, bus } : x)) }, "disks");
        }}
        errors={errors.disks}
      />
      <ChoiceTable
        legend="Network interfaces"
        columns={["Interface", "Binding", "Card"]}
        rows={form.interfaces.map((i) => ({ name: i.name, shown: i.binding || "—", value: i.model }))}
        options={() => [
          { value: "", label: "virtio (the default)" },
          ...INTERFACE_MODELS.filter((m) => m !== "virtio").map((m) => ({ value: m, label: m })),
        ]}
        choiceLabel={(iface) => `Card of ${iface}`}
        onPick={(i, model) => {
          change({ interfaces: form.interfaces.map((x, j) => (j === i ? { ...x, model } : x)) }, "interfaces");
        }}
        errors={errors.interfaces}
      />
      {lines("labels", "Labels", "The VM's own labels: key=value, one per line.")}
      {lines("annotations", "Annotations", "key=value, one per line.")}
      {lines("nodeSelector", "Node selector", "The labels a node must have to run the VM: key=value, one per line.")}
      {lines(
        "tolerations",
        "Tolerations",
        "The taints of nodes it may run on, as kubectl taint writes them: key=value:NoSchedule, key:NoExecute, key, " +
          "or * for every taint; one per line.",
      )}
      <button type="submit" disabled={update.isPending}>
        {update.isPending ? "Saving…" : "Save"}
      </button>{" "}
      <button
        type="button"
        className="secondary"
        onClick={() => {
          onDone(false);
        }}
      >
        Cancel
      </button>
    </form>
  );
}
