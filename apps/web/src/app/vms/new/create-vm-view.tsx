"use client";

import { parseQuantity, validateVirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useMemo, useState } from "react";
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
import { Field } from "../../ui/field";
import { FormErrors, PreferenceField, RunStrategyField, SizeFields } from "../../ui/vm-fields";
import { Shell, useNamespace } from "../shell";

// Checked as you type with the server's own rules (kubevirt-api's
// validateVirtualMachine runs here too): each problem next to its field in
// words, the API's path on hover, every one at once when Create is pressed;
// warnings for choices that are allowed but probably not meant.

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

  // What the size, preference and run strategy fields share with the edit form's.
  const shared = {
    prefix: "vm",
    values: form,
    onChange: (field: keyof VmForm, value: string) => {
      setForm({ ...form, [field]: value });
      setTouched(new Set(touched).add(field));
    },
    errors,
    catalog: instancetypes.data,
  };

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
        <FormErrors errors={errors[""]} />
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
            <SizeFields
              {...shared}
              warnings={{ size: warnings.size, memory: warnings.memory }}
              memoryNote={largestNodeNote}
            />
            <PreferenceField {...shared} />
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
            <RunStrategyField {...shared} />
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
