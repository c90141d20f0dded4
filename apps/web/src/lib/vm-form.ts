// The create form's VM: what a person fills in, as a KubeVirt manifest, and
// which form field each of the API's causes concerns.

export interface VmForm {
  name: string;
  /** A cluster instancetype's name, or "" for the CPU and memory given here. */
  size: string;
  /** A cluster preference's name, or "" for none. */
  preference: string;
  cpu: string;
  memory: string;
  image: string;
  user: string;
  password: string;
  sshKey: string;
  runStrategy: string;
  /**
   * The root disk: the container image itself (ephemeral: its changes are gone when the VM stops), a persistent disk
   * copied from an image of the namespace (a DataVolume), or a blank persistent disk with an ISO image to install from.
   */
  rootDisk: RootDisk;
  /** The image (a DataVolume of the namespace) to copy, or the ISO to install from. */
  sourceImage: string;
  /** The persistent disk's size. */
  diskSize: string;
}

export const ROOT_DISKS = ["container", "clone", "install"] as const;
export type RootDisk = (typeof ROOT_DISKS)[number];

export const EMPTY_FORM: VmForm = {
  name: "",
  size: "",
  preference: "",
  cpu: "1",
  memory: "1Gi",
  image: "",
  user: "",
  password: "",
  sshKey: "",
  runStrategy: "Always",
  rootDisk: "container",
  sourceImage: "",
  diskSize: "10Gi",
};

/** The persistent root disk's DataVolume, named after the VM, as virtctl create vm names a volume's. */
export const rootDataVolumeName = (vmName: string) => `${vmName.trim()}-root`;

/**
 * The Secret that keeps the form's cloud-init user data (a password, an SSH
 * key) out of the VM's spec, which those who may only view VMs can read. The
 * API creates it as the user, owned by the VM, and the VM names it.
 */
export const cloudInitSecretName = (vmName: string) => `${vmName.trim()}-cloud-init`;

/** The form's cloud-init user data, or undefined when it asks for no user or key. */
function cloudConfig(form: VmForm): string | undefined {
  if (!form.user.trim() && !form.sshKey.trim()) return undefined;
  const lines = [
    "#cloud-config",
    "users:",
    `  - name: ${JSON.stringify(form.user.trim() || "user")}`,
    "    shell: /bin/bash",
    "    sudo: ALL=(ALL) NOPASSWD:ALL",
  ];
  if (form.password) lines.push("    lock_passwd: false", `    plain_text_passwd: ${JSON.stringify(form.password)}`);
  if (form.sshKey.trim()) lines.push("    ssh_authorized_keys:", `      - ${JSON.stringify(form.sshKey.trim())}`);
  return `${lines.join("\n")}\n`;
}

/** The root disk's volume, the DataVolume it is filled from, and an installer ISO's CD-ROM, by the form's choice. */
function rootDisk(form: VmForm, namespace: string) {
  const dvName = rootDataVolumeName(form.name);
  const storage = { resources: { requests: { storage: form.diskSize.trim() } } };
  if (form.rootDisk === "container")
    return { volume: { name: "root", containerDisk: { image: form.image } }, templates: [], installer: undefined };
  if (form.rootDisk === "clone") {
    return {
      volume: { name: "root", dataVolume: { name: dvName } },
      templates: [
        { metadata: { name: dvName }, spec: { source: { pvc: { namespace, name: form.sourceImage } }, storage } },
      ],
      installer: undefined,
    };
  }
  // A blank disk that boots first, and the ISO on a CD-ROM after it: the firmware passes over the blank disk to the
  // installer, and once the OS is on the disk, the installer's reboot starts it from there (the ISO can stay until
  // it is removed).
  return {
    volume: { name: "root", dataVolume: { name: dvName } },
    templates: [{ metadata: { name: dvName }, spec: { source: { blank: {} }, storage } }],
    installer: {
      disk: { name: "installer", cdrom: { bus: "sata" }, bootOrder: 2 },
      volume: { name: "installer", persistentVolumeClaim: { claimName: form.sourceImage, readOnly: true } },
    },
  };
}

export function vmFromForm(form: VmForm, namespace = "default") {
  const userData = cloudConfig(form);
  const cores = Number(form.cpu);
  const root = rootDisk(form, namespace);
  const disks: { name: string; disk?: { bus: string }; cdrom?: { bus: string }; bootOrder?: number }[] = [
    { name: "root", disk: { bus: "virtio" }, ...(root.installer ? { bootOrder: 1 } : {}) },
    ...(root.installer ? [root.installer.disk] : []),
    ...(userData ? [{ name: "cloudinit", disk: { bus: "virtio" } }] : []),
  ];
  const volumes: Record<string, unknown>[] = [
    root.volume,
    ...(root.installer ? [root.installer.volume] : []),
    ...(userData
      ? [{ name: "cloudinit", cloudInitNoCloud: { secretRef: { name: cloudInitSecretName(form.name) } } }]
      : []),
  ];
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name: form.name.trim() },
    spec: {
      runStrategy: form.runStrategy,
      // An instancetype sizes the VM, so the template leaves CPU and memory to it (setting them would conflict).
      ...(form.size ? { instancetype: { name: form.size } } : {}),
      ...(form.preference ? { preference: { name: form.preference } } : {}),
      ...(root.templates.length > 0 ? { dataVolumeTemplates: root.templates } : {}),
      template: {
        metadata: { labels: { "kubevirt.io/vm": form.name.trim() } },
        spec: {
          domain: {
            ...(form.size
              ? {}
              : { cpu: { cores: Number.isFinite(cores) ? cores : form.cpu }, memory: { guest: form.memory.trim() } }),
            devices: { disks, interfaces: [{ name: "default", masquerade: {} }] },
          },
          networks: [{ name: "default", pod: {} }],
          volumes,
        },
      },
    },
  };
}

/**
 * The user data to send with a VM for its Secret: the form's, when the VM
 * (as the form made it, or as edited in YAML) still names the form's Secret.
 */
export function userDataFor(vm: unknown, form: VmForm): string | undefined {
  const userData = cloudConfig(form);
  const spec = vm as {
    metadata?: { name?: unknown };
    spec?: { template?: { spec?: { volumes?: { cloudInitNoCloud?: { secretRef?: { name?: unknown } } }[] } } };
  } | null;
  const name = spec?.metadata?.name;
  if (userData === undefined || typeof name !== "string") return undefined;
  const named = (spec?.spec?.template?.spec?.volumes ?? []).some(
    (v) => v.cloudInitNoCloud?.secretRef?.name === cloudInitSecretName(name),
  );
  return named ? userData : undefined;
}

const FIELD_OF: [RegExp, keyof VmForm][] = [
  [/^metadata\.name/, "name"],
  [/^spec\.instancetype/, "size"],
  [/^spec\.preference/, "preference"],
  [/^spec\.template\.spec\.domain\.cpu/, "cpu"],
  [/^spec\.template\.spec\.domain\.memory|^spec\.template\.spec\.domain\.resources/, "memory"],
  [/^spec\.template\.spec\.volumes\[0\]\.containerDisk/, "image"],
  [/^spec\.dataVolumeTemplates\[0\]\.spec\.source/, "sourceImage"],
  [/^spec\.dataVolumeTemplates\[0\]\.spec\.storage/, "diskSize"],
  [/^spec\.template\.spec\.volumes\[\d\]\.persistentVolumeClaim/, "sourceImage"],
  [/^spec\.template\.spec\.volumes\[\d\]\.cloudInitNoCloud/, "user"],
  [/^spec\.runStrategy|^spec\.running/, "runStrategy"],
];

/** A problem with the form, in words, under the field it concerns; `path` is the API's field, for those who want it. */
export interface FormProblem {
  message: string;
  path: string;
}

/** What each form field is called at the start of a sentence. */
const LABELS: Record<keyof VmForm, string> = {
  name: "The name",
  size: "The size",
  preference: "The guest OS",
  cpu: "CPU cores",
  memory: "Memory",
  image: "The boot image",
  user: "The cloud-init user",
  password: "The password",
  sshKey: "The SSH key",
  runStrategy: "The run strategy",
  rootDisk: "The root disk",
  sourceImage: "The image",
  diskSize: "The disk size",
};

/**
 * Each cause under the form field it concerns (the rest under ""), in words: the field's label instead of the API's
 * path. `fieldOf` finds a cause's field by its path; `labels` say what each field is called.
 */
export function groupCauses<F extends string>(
  causes: { field: string; message: string }[],
  fieldOf: [RegExp, F][],
  labels: Record<F, string>,
): Partial<Record<F | "", FormProblem[]>> {
  const result: Partial<Record<F | "", FormProblem[]>> = {};
  for (const cause of causes) {
    const field = fieldOf.find(([pattern]) => pattern.test(cause.field))?.[1] ?? "";
    // A message starts with the path it concerns; next to its field it reads better with the field's label.
    const message =
      field !== "" && cause.message.startsWith(`${cause.field} `)
        ? `${labels[field]} ${cause.message.slice(cause.field.length + 1)}`
        : cause.message;
    (result[field] ??= []).push({ message, path: cause.field });
  }
  return result;
}

/** The create form's causes under its fields. */
export function causesByField(
  causes: { field: string; message: string }[],
): Partial<Record<keyof VmForm | "", FormProblem[]>> {
  return groupCauses(causes, FIELD_OF, LABELS);
}

/**
 * The largest memory any node gives pods, and which node, for the form's warning; undefined when the nodes are not
 * known.
 */
export interface LargestNode {
  name: string;
  memoryBytes: number;
}

/** Choices that are allowed but probably not meant, in words: they warn and do not stop the form. */
export function formWarnings(
  form: VmForm,
  memoryBytes: number | undefined,
  largest: LargestNode | undefined,
): Partial<Record<keyof VmForm, string>> {
  const warnings: Partial<Record<keyof VmForm, string>> = {};
  const user = form.user.trim();
  if (user && !form.password && !form.sshKey.trim())
    warnings.password =
      `${user} gets neither a password nor an SSH key: nobody can log in ` +
      `as ${user}. Give one, or leave the user empty.`;
  if (user === "root")
    warnings.user =
      "Guests usually refuse root's log-in over SSH, and a mistake as root costs more: " +
      "prefer a user of your own, who gets sudo.";
  if (memoryBytes !== undefined && largest && memoryBytes > largest.memoryBytes) {
    const gib = (n: number) => `${(n / 1024 ** 3).toFixed(1)} GiB`;
    warnings[form.size ? "size" : "memory"] =
      `No node can hold ${gib(memoryBytes)}: the largest, ${largest.name}, ` +
      `has ${gib(largest.memoryBytes)} for pods. The VM would wait, unplaced.`;
  }
  return warnings;
}
