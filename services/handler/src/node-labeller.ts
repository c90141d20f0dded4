import { open } from "node:fs/promises";
import { join } from "node:path";
import { NodeLabelPrefix } from "@kubevirt-ts/node-contract";
import { limits } from "./limits.ts";

// KubeVirt's node labeller: the CPU models, features, vendor and machine types
// libvirt says QEMU offers on this node, as node labels. The handler's image
// has no libvirt: an init container of the handler's DaemonSet, in the
// launcher's image, runs libvirt's QEMU driver in session mode and writes its
// answers into a folder the handler reads (as KubeVirt's node-labeller.sh).
// The files are libvirt's own output; still, each is read up to a bound and
// every name is checked before it becomes a label key.

/** The files the init container writes (charts/kubevirt-ts/templates/handler.yaml runs the commands). */
export const LabellerFile = {
  /** `virsh domcapabilities --machine q35 --arch x86_64 --virttype <kvm|qemu>`. */
  domCapabilities: "virsh_domcapabilities.xml",
  /** `virsh hypervisor-cpu-baseline --features` of the domain capabilities: the host model's features, expanded. */
  supportedFeatures: "supported_features.xml",
  /** `virsh capabilities`: the machine types. */
  capabilities: "capabilities.xml",
} as const;

/** KubeVirt's default obsolete CPU models: never labelled, so no VMI asks for one and lands here. */
export const OBSOLETE_CPU_MODELS: ReadonlySet<string> = new Set(
  [
    "486",
    "pentium",
    "pentium2",
    "pentium3",
    "pentiumpro",
    "coreduo",
    "n270",
    "core2duo",
    "Conroe",
    "athlon",
    "phenom",
    "qemu64",
    "qemu32",
    "kvm64",
    "kvm32",
  ].flatMap((m) => [m, `${m}-v1`]),
);

/** KubeVirt's default emulated machines on amd64: the machine types it labels and accepts. */
const MACHINE_TYPE_PATTERNS = [/^q35$/, /^pc-q35-/];

/** A label key's name part (after the prefix's slash), as Kubernetes takes it. */
const LABEL_NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

export interface NodeCapabilities {
  domCapabilities: string;
  supportedFeatures?: string | undefined;
  capabilities?: string | undefined;
}

function attributes(tag: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [, name, , value] of tag.matchAll(/([\w-]+)=(['"])(.*?)\2/g))
    if (name !== undefined && value !== undefined) result[name] = value;
  return result;
}

/** The inside of the first <mode name='...'> element of the domain capabilities' <cpu>. */
function cpuMode(xml: string, name: string): string | undefined {
  const cpu = /<cpu>([\s\S]*?)<\/cpu>/.exec(xml)?.[1] ?? "";
  for (const [, open, body] of cpu.matchAll(/<mode\b([^>]*?)(?:\/>|>([\s\S]*?)<\/mode>)/g)) {
    const attrs = attributes(open ?? "");
    if (attrs.name === name && attrs.supported === "yes") return body ?? "";
  }
  return undefined;
}

function requiredFeatures(xml: string): string[] {
  return [...xml.matchAll(/<feature\b([^>]*)\/>/g)]
    .map(([, a]) => attributes(a ?? ""))
    .filter((a) => a.policy === "require" && a.name !== undefined)
    .map((a) => a.name ?? "");
}

function text(xml: string, tag: string): string | undefined {
  return new RegExp(`<${tag}\\b[^>]*>([^<]*)</${tag}>`).exec(xml)?.[1]?.trim();
}

/**
 * The node labeller's labels for what libvirt answered, as KubeVirt's: usable custom models (not obsolete) as
 * cpu-model and cpu-model-migration; the host model as host-model-cpu and cpu-model-migration, its required
 * features as host-model-required-features; every feature of the expanded host model as cpu-feature; the vendor;
 * the q35 machine types. A name Kubernetes would refuse as a label is left out.
 */
export function nodeLabellerLabels(caps: NodeCapabilities): Record<string, string> {
  const labels: Record<string, string> = {};
  const add = (prefix: string, name: string | undefined) => {
    if (name !== undefined && LABEL_NAME.test(name) && Object.keys(labels).length < limits.nodeLabellerLabels)
      labels[prefix + name] = "true";
  };
  const custom = cpuMode(caps.domCapabilities, "custom") ?? "";
  for (const [, open, model] of custom.matchAll(/<model\b([^>]*)>([^<]*)<\/model>/g)) {
    const name = model?.trim();
    if (attributes(open ?? "").usable !== "yes" || name === undefined || OBSOLETE_CPU_MODELS.has(name)) continue;
    add(NodeLabelPrefix.CpuModel, name);
    add(NodeLabelPrefix.CpuModelMigration, name);
  }
  const hostModel = cpuMode(caps.domCapabilities, "host-model");
  if (hostModel !== undefined) {
    const name = text(hostModel, "model");
    add(NodeLabelPrefix.HostModelCpu, name);
    if (name !== undefined && !OBSOLETE_CPU_MODELS.has(name)) add(NodeLabelPrefix.CpuModelMigration, name);
    add(NodeLabelPrefix.CpuVendor, text(hostModel, "vendor"));
    for (const feature of requiredFeatures(hostModel)) add(NodeLabelPrefix.HostModelRequiredFeatures, feature);
  }
  for (const feature of requiredFeatures(caps.supportedFeatures ?? "")) add(NodeLabelPrefix.CpuFeature, feature);
  // The machine types of the x86_64 guest (aliases such as q35 included), not the deprecated ones.
  const x86 = /<arch name=['"]x86_64['"]>([\s\S]*?)<\/arch>/.exec(caps.capabilities ?? "")?.[1] ?? "";
  for (const [, open, machine] of x86.matchAll(/<machine\b([^>]*)>([^<]*)<\/machine>/g)) {
    const name = machine?.trim() ?? "";
    if (attributes(open ?? "").deprecated !== "yes" && MACHINE_TYPE_PATTERNS.some((p) => p.test(name)))
      add(NodeLabelPrefix.MachineType, name);
  }
  return labels;
}

/**
 * One file of the labeller's folder, read up to the bound: refused, naming the file, when larger; undefined when
 * absent.
 */
async function readBounded(dir: string, name: string): Promise<string | undefined> {
  const path = join(dir, name);
  const handle = await open(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  });
  if (!handle) return undefined;
  try {
    const buffer = Buffer.alloc(limits.nodeLabellerFileBytes + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > limits.nodeLabellerFileBytes)
        throw new Error(
          `${path} is larger than ${String(limits.nodeLabellerFileBytes)} bytes: not libvirt's ` +
            "answer; the handler labels the node without it",
        );
    }
    return buffer.subarray(0, length).toString("utf8");
  } finally {
    await handle.close();
  }
}

/** The labeller's labels from what the init container wrote in dir; undefined when it wrote no domain capabilities. */
export async function readNodeLabellerLabels(dir: string): Promise<Record<string, string> | undefined> {
  const domCapabilities = await readBounded(dir, LabellerFile.domCapabilities);
  if (domCapabilities === undefined || domCapabilities.trim() === "") return undefined;
  return nodeLabellerLabels({
    domCapabilities,
    supportedFeatures: await readBounded(dir, LabellerFile.supportedFeatures),
    capabilities: await readBounded(dir, LabellerFile.capabilities),
  });
}
