"use client";

import { RUN_STRATEGIES, parseQuantity, validateVirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { type ReactNode, useMemo, useState } from "react";
import { parse, stringify } from "yaml";
import { describeError, useTRPC } from "../../../lib/trpc";
import {
  EMPTY_FORM,
  type FormProblem,
  type LargestNode,
  type RootDisk,
  type VmForm,
  causesByField,
  formWarnings,
  userDataFor,
  vmFromForm,
} from "../../../lib/vm-form";
import { Shell, useNamespace } from "../shell";

// Checked as you type with the server's own rules (kubevirt-api's
// validateVirtualMachine runs here too): each problem next to its field in
// words, the API's path on hover, every one at once when Create is pressed;
// warnings for choices that are allowed but probably not meant.

function Field({
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
      {errors?.length ? (
        <p id={`${id}-error`} className="error" role="alert">
          {errors.map((e) => (
            <span key={e.message} title={`API field: ${e.path}`} data-path={e.path}>
              {e.message}.{" "}
            </span>
          ))}
        </p>
      ) : null}
      {warning && (
        <p id={`${id}-warning`} className="warning" role="status">
          {warning}
        </p>
      )}
    </div>
  );
}

export function CreateVmView() {
  const trpc = useTRPC();
  const router = useRouter();
  const namespace = useNamespace();
  const images = useQuery(trpc.images.queryOptions());
  // The namespace's disk images that are ready: what a persistent disk is copied from, or an OS installed from.
  const diskImages = useQuery(trpc.dataVolumes.list.queryOptions({ namespace }));
  const readyImages = (diskImages.data ?? [])
    .filter((dv) => dv.status?.phase === "Succeeded")
    .map((dv) => (typeof dv.metadata.name === "string" ? dv.metadata.name : ""));
  const instancetypes = useQuery(trpc.instancetypes.queryOptions());
  const [form, setForm] = useState<VmForm>(EMPTY_FORM);
  const [mode, setMode] = useState<"form" | "yaml">("form");
  const [yamlText, setYamlText] = useState("");
  // The server's problems with the last attempt (those the browser cannot know, as a name taken), by field.
  const [serverErrors, setServerErrors] = useState<Partial<Record<keyof VmForm | "", FormProblem[]>>>({});
  // The fields typed in, and whether Create was pressed: problems show for those, or for every field after.
  const [touched, setTouched] = useState<Set<keyof VmForm>>(new Set());
  const [tried, setTried] = useState(false);
  const nodes = useQuery({ ...trpc.nodes.queryOptions({ namespace }), retry: false });
  const create = useMutation(trpc.vms.create.mutationOptions());
  const image = form.image !== "" ? form.image : (images.data?.[0]?.image ?? "");
  const sourceImage = form.sourceImage !== "" ? form.sourceImage : (readyImages[0] ?? "");
  const filled = () => vmFromForm({ ...form, image, sourceImage }, namespace);
  const set = (key: keyof VmForm) => (e: { target: { value: string } }) => {
    setForm({ ...form, [key]: e.target.value });
    setTouched(new Set(touched).add(key));
  };
  // The form as the server will judge it, at every change.
  const local = useMemo(() => {
    const vm = vmFromForm({ ...form, image, sourceImage }, namespace);
    const result = validateVirtualMachine({ ...vm, metadata: { ...vm.metadata, namespace } });
    return result.ok ? {} : causesByField(result.causes);
  }, [form, image, sourceImage, namespace]);
  const errors: Partial<Record<keyof VmForm | "", FormProblem[]>> = { ...serverErrors };
  for (const [field, problems] of Object.entries(local) as [keyof VmForm | "", FormProblem[]][]) {
    if (tried || field === "" || touched.has(field)) errors[field] = problems;
  }
  const largest: LargestNode | undefined = nodes.data?.nodes.reduce<LargestNode | undefined>(
    (best, n) =>
      best && best.memoryBytes >= n.allocatable.memory ? best : { name: n.name, memoryBytes: n.allocatable.memory },
    undefined,
  );
  const sizeMemory = form.size ? instancetypes.data?.sizes.find((i) => i.name === form.size)?.memory : form.memory;
  const largestNodeNote = largest
    ? ` The largest node, ${largest.name}, has ${(largest.memoryBytes / 1024 ** 3).toFixed(1)} GiB for pods.`
    : "";
  const warnings = formWarnings(form, sizeMemory === undefined ? undefined : parseQuantity(sizeMemory.trim()), largest);

  function switchMode(next: "form" | "yaml"): void {
    if (next === "yaml") setYamlText(stringify(filled()));
    setMode(next);
    setServerErrors({});
  }

  async function submit(): Promise<void> {
    let vm: unknown;
    if (mode === "yaml") {
      try {
        vm = parse(yamlText);
      } catch (error) {
        setServerErrors({
          "": [
            { message: `The YAML does not parse: ${error instanceof Error ? error.message : String(error)}`, path: "" },
          ],
        });
        return;
      }
    } else {
      // Every problem at once, and nothing sent while there is one.
      setTried(true);
      if (Object.keys(local).length > 0) return;
      vm = filled();
    }
    try {
      // The password or key goes into a Secret of the VM, not into its spec.
      const created = await create.mutateAsync({ namespace, vm, cloudInitUserData: userDataFor(vm, form) });
      const name = typeof created.metadata.name === "string" ? created.metadata.name : "";
      router.push(
        `/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?ns=${encodeURIComponent(namespace)}`,
      );
    } catch (error) {
      const { message, causes } = describeError(error);
      setServerErrors(
        causes.length > 0
          ? mode === "yaml"
            ? { "": causes.map((c) => ({ message: c.message, path: c.field })) }
            : causesByField(causes)
          : { "": [{ message, path: "" }] },
      );
    }
  }

  return (
    <Shell title="Create a virtual machine">
      <div className="toolbar" role="group" aria-label="Editor">
        <button
          type="button"
          className="secondary"
          aria-pressed={mode === "form"}
          onClick={() => {
            switchMode("form");
          }}
        >
          Form
        </button>
        <button
          type="button"
          className="secondary"
          aria-pressed={mode === "yaml"}
          onClick={() => {
            switchMode("yaml");
          }}
        >
          YAML
        </button>
      </div>
      <form
        className="card"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        {errors[""] && (
          <div className="error" role="alert">
            {errors[""].map((m) => (
              <p key={m.message} title={m.path ? `API field: ${m.path}` : undefined}>
                {m.message}
              </p>
            ))}
          </div>
        )}
        {mode === "form" && tried && Object.keys(local).length > 0 && (
          <p className="error" role="alert" data-testid="form-problems">
            {`Fix ${String(Object.values(local).flat().length)} problem(s) before creating ` +
              "the VM; each is shown next to its field."}
          </p>
        )}
        {mode === "form" ? (
          <>
            <Field
              id="vm-name"
              label="Name"
              hint="Lower-case letters, digits and '-'; it becomes the guest's hostname."
              errors={errors.name}
            >
              {(d, invalid) => (
                <input
                  id="vm-name"
                  value={form.name}
                  onChange={set("name")}
                  aria-describedby={d}
                  aria-invalid={invalid}
                  autoComplete="off"
                />
              )}
            </Field>
            <Field
              id="vm-size"
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
                  id="vm-size"
                  value={form.size}
                  onChange={set("size")}
                  aria-describedby={d}
                  aria-invalid={invalid}
                >
                  <option value="">Custom: CPU cores and memory below</option>
                  {(instancetypes.data?.sizes ?? []).map((i) => (
                    <option key={i.name} value={i.name}>
                      {i.name}: {i.cpu} vCPU, {i.memory}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            {form.size === "" && (
              <>
                <Field id="vm-cpu" label="CPU cores" errors={errors.cpu}>
                  {(d, invalid) => (
                    <input
                      id="vm-cpu"
                      type="number"
                      min={1}
                      max={64}
                      value={form.cpu}
                      onChange={set("cpu")}
                      aria-describedby={d}
                      aria-invalid={invalid}
                    />
                  )}
                </Field>
                <Field
                  id="vm-memory"
                  label="Memory"
                  hint={`A Kubernetes quantity, such as 512Mi or 2Gi.${largestNodeNote}`}
                  errors={errors.memory}
                  warning={warnings.memory}
                >
                  {(d, invalid) => (
                    <input
                      id="vm-memory"
                      value={form.memory}
                      onChange={set("memory")}
                      aria-describedby={d}
                      aria-invalid={invalid}
                    />
                  )}
                </Field>
              </>
            )}
            <Field
              id="vm-preference"
              label="Guest OS"
              hint={
                "A preference of the cluster: the devices and firmware the guest's OS prefers, " +
                "and the least it needs."
              }
              errors={errors.preference}
            >
              {(d, invalid) => (
                <select
                  id="vm-preference"
                  value={form.preference}
                  onChange={set("preference")}
                  aria-describedby={d}
                  aria-invalid={invalid}
                >
                  <option value="">No preference</option>
                  {(instancetypes.data?.preferences ?? []).map((p) => (
                    <option key={p.name} value={p.name}>
                      {p.displayName} ({p.name})
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <fieldset className="field">
              <legend>Root disk</legend>
              {(
                [
                  ["container", "Container image", "Boots from a guest image; its changes are gone when the VM stops."],
                  [
                    "clone",
                    "Persistent disk from an image",
                    "A copy of an image of this namespace (Images page), kept across restarts.",
                  ],
                  [
                    "install",
                    "Blank disk and an ISO to install from",
                    "The ISO boots first; install the OS onto the disk through the VNC console.",
                  ],
                ] as [RootDisk, string, string][]
              ).map(([value, label, hint]) => (
                <label key={value} className="choice">
                  <input
                    type="radio"
                    name="vm-root-disk"
                    value={value}
                    checked={form.rootDisk === value}
                    onChange={() => {
                      setForm({ ...form, rootDisk: value });
                    }}
                  />{" "}
                  {label} <span className="hint">{hint}</span>
                </label>
              ))}
            </fieldset>
            {form.rootDisk === "container" ? (
              <Field id="vm-image" label="Boot image" errors={errors.image}>
                {(d, invalid) => (
                  <select
                    id="vm-image"
                    value={image}
                    onChange={set("image")}
                    aria-describedby={d}
                    aria-invalid={invalid}
                  >
                    {(images.data ?? []).map((i) => (
                      <option key={i.image} value={i.image}>
                        {i.name}: {i.description}
                      </option>
                    ))}
                    {images.data?.length === 0 && (
                      <option value="">No guest images are configured (chart value guestImages)</option>
                    )}
                  </select>
                )}
              </Field>
            ) : (
              <>
                <Field
                  id="vm-source-image"
                  label={form.rootDisk === "clone" ? "Image to copy" : "ISO to install from"}
                  hint="A ready image of this namespace; upload one on the Images page."
                  errors={errors.sourceImage}
                >
                  {(d, invalid) => (
                    <select
                      id="vm-source-image"
                      value={sourceImage}
                      onChange={set("sourceImage")}
                      aria-describedby={d}
                      aria-invalid={invalid}
                    >
                      {readyImages.map((n) => (
                        <option key={n} value={n}>
                          {n}
                        </option>
                      ))}
                      {readyImages.length === 0 && (
                        <option value="">No ready images in {namespace}: upload one on the Images page</option>
                      )}
                    </select>
                  )}
                </Field>
                <Field
                  id="vm-disk-size"
                  label="Disk size"
                  hint="A Kubernetes quantity, such as 10Gi: at least the image's size."
                  errors={errors.diskSize}
                >
                  {(d, invalid) => (
                    <input
                      id="vm-disk-size"
                      value={form.diskSize}
                      onChange={set("diskSize")}
                      aria-describedby={d}
                      aria-invalid={invalid}
                    />
                  )}
                </Field>
              </>
            )}
            <Field
              id="vm-user"
              label="Cloud-init user"
              hint="Created in the guest at first boot; leave empty for none."
              errors={errors.user}
              warning={warnings.user}
            >
              {(d, invalid) => (
                <input
                  id="vm-user"
                  value={form.user}
                  onChange={set("user")}
                  aria-describedby={d}
                  aria-invalid={invalid}
                  autoComplete="off"
                />
              )}
            </Field>
            <Field
              id="vm-password"
              label="Password"
              hint={
                "For logging in on the serial console or VNC. " +
                "Kept with the SSH key in a Secret of the VM, not in its spec."
              }
              warning={warnings.password}
            >
              {(d) => (
                <input
                  id="vm-password"
                  type="password"
                  value={form.password}
                  onChange={set("password")}
                  aria-describedby={d}
                  autoComplete="new-password"
                />
              )}
            </Field>
            <Field id="vm-ssh" label="SSH public key" hint="Optional: ssh-ed25519 AAAA…">
              {(d) => (
                <textarea id="vm-ssh" rows={2} value={form.sshKey} onChange={set("sshKey")} aria-describedby={d} />
              )}
            </Field>
            <Field
              id="vm-run-strategy"
              label="Run strategy"
              hint="Always keeps it running; Halted creates it stopped."
              errors={errors.runStrategy}
            >
              {(d, invalid) => (
                <select
                  id="vm-run-strategy"
                  value={form.runStrategy}
                  onChange={set("runStrategy")}
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
          </>
        ) : (
          <Field id="vm-yaml" label="VirtualMachine manifest (kubevirt.io/v1)">
            {(d) => (
              <textarea
                id="vm-yaml"
                rows={28}
                value={yamlText}
                onChange={(e) => {
                  setYamlText(e.target.value);
                }}
                aria-describedby={d}
                spellCheck={false}
              />
            )}
          </Field>
        )}
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? "Creating…" : "Create"}
        </button>
      </form>
    </Shell>
  );
}
