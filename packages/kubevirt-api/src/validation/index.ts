import type { z } from "zod";
import { RUN_STRATEGIES } from "../constants.ts";
import { type DataVolume, dataVolume } from "../schema/datavolume.ts";
import { type VirtualMachine, virtualMachine } from "../schema/vm.ts";
import { type VirtualMachineInstanceMigration, virtualMachineInstanceMigration } from "../schema/migration.ts";
import { type MigrationPolicy, migrationPolicy } from "../schema/migration-policy.ts";
import { type KubeVirt, kubeVirt } from "../schema/kubevirt.ts";
import { KUBEVIRT_CR_NAME } from "../cluster-config.ts";
import { parseQuantity } from "../quantity.ts";
import { type VirtualMachineInstance, type VmiSpec, virtualMachineInstance } from "../schema/vmi.ts";
import { type ExpansionSources, expandVmiSpec } from "../instancetype/expand.ts";
import { Causes, type Validation } from "./causes.ts";
import { validateCompute } from "./compute.ts";
import { validateDataVolumeSpec } from "./data-volumes.ts";
import { dnsLabelProblem, dnsSubdomainProblem } from "./names.ts";
import { validateNetworking } from "./network.ts";
import { validateProbes } from "./probes.ts";
import { validateStorage } from "./storage.ts";
import { zodIssuesToCauses } from "./zod-issues.ts";

export { type Cause, CauseType, Causes, type Validation, summarize } from "./causes.ts";
export { dnsLabelProblem, dnsSubdomainProblem } from "./names.ts";
export { MAX_CLOUD_INIT_BYTES } from "./storage.ts";

function validateBootOrder(spec: VmiSpec, path: string, causes: Causes): void {
  const owners = new Map<number, string>();
  const devices = [
    ...(spec.domain.devices.disks ?? []).map((d, i) => [d.bootOrder, `${path}.domain.devices.disks[${i}]`] as const),
    ...(spec.domain.devices.interfaces ?? []).map(
      (n, i) => [n.bootOrder, `${path}.domain.devices.interfaces[${i}]`] as const,
    ),
  ];
  for (const [order, devicePath] of devices) {
    if (order === undefined) continue;
    const owner = owners.get(order);
    if (owner !== undefined) {
      causes.duplicate(
        `${devicePath}.bootOrder`,
        `${order} is already the boot order of ${owner}; give each device its own boot order`,
      );
    } else {
      owners.set(order, devicePath);
    }
  }
}

/** KubeVirt's rules for a VMI spec that already has the right shape. */
function validateVmiSpecRules(spec: VmiSpec, path: string, causes: Causes, sizedElsewhere = false): void {
  validateCompute(spec.domain, `${path}.domain`, causes, sizedElsewhere);
  validateStorage(spec, path, causes);
  validateNetworking(spec, path, causes);
  validateBootOrder(spec, path, causes);
  validateProbes(spec, path, causes);
  if (spec.architecture !== undefined && spec.architecture !== "amd64") {
    causes.notSupported(
      `${path}.architecture`,
      `is ${JSON.stringify(spec.architecture)}; only amd64 guests run here (the nodes emulate or ` +
        "virtualize x86-64 alone): set amd64 or leave it out",
    );
  }
  if (spec.terminationGracePeriodSeconds !== undefined && spec.terminationGracePeriodSeconds < 0) {
    causes.invalid(
      `${path}.terminationGracePeriodSeconds`,
      `must not be negative, got ${spec.terminationGracePeriodSeconds}`,
    );
  }
  for (const key of ["hostname", "subdomain"] as const) {
    const value = spec[key];
    const problem = value === undefined ? undefined : dnsLabelProblem(value);
    if (problem) causes.invalid(`${path}.${key}`, problem);
  }
}

/** KubeVirt's hook sidecars run code of the user's image beside the launcher; kubevirt-ts runs none, so it says so. */
const HOOK_SIDECARS = "hooks.kubevirt.io/hookSidecars";

function refuseHookSidecars(annotations: Record<string, string> | undefined, path: string, causes: Causes): void {
  if (annotations?.[HOOK_SIDECARS] === undefined) return;
  causes.notSupported(
    `${path}.${HOOK_SIDECARS}`,
    "is not supported: kubevirt-ts runs no hook sidecars, so the hook would be ignored; remove the annotation",
  );
}

function validateObjectName(
  metadata: { name?: string | undefined; generateName?: string | undefined },
  causes: Causes,
): void {
  if (metadata.name === undefined) {
    if (metadata.generateName === undefined) causes.required("metadata.name", "is required: give the object a name");
    return;
  }
  // The name becomes the guest's hostname and part of its launcher pod's name.
  const problem = dnsLabelProblem(metadata.name);
  if (problem) causes.invalid("metadata.name", problem);
}

function parse<T>(schema: z.ZodType<T>, input: unknown): Validation<T> {
  const result = schema.safeParse(input, { reportInput: true });
  return result.success ? { ok: true, value: result.data } : { ok: false, causes: zodIssuesToCauses(result.error) };
}

function finish<T>(value: T, causes: Causes): Validation<T> {
  return causes.list.length === 0 ? { ok: true, value } : { ok: false, causes: causes.list };
}

/** Validates a VirtualMachineInstance: its shape first, then KubeVirt's rules. */
export function validateVirtualMachineInstance(input: unknown): Validation<VirtualMachineInstance> {
  const parsed = parse(virtualMachineInstance, input);
  if (!parsed.ok) return parsed;
  const causes = new Causes();
  validateObjectName(parsed.value.metadata, causes);
  refuseHookSidecars(parsed.value.metadata.annotations, "metadata.annotations", causes);
  validateVmiSpecRules(parsed.value.spec, "spec", causes);
  return finish(parsed.value, causes);
}

/** A VirtualMachine's shape alone, before its instancetype and preference are looked up. */
export function parseVirtualMachine(input: unknown): Validation<VirtualMachine> {
  return parse(virtualMachine, input);
}

/**
 * Validates a VirtualMachine: its shape first, then KubeVirt's rules, including those of its template as its
 * instancetype and preference (`sources`, as found; one not found is not checked against) expand it.
 */
/** KubeVirt's run strategy for the target of a live migration between clusters, which needs migration. */
const WAIT_AS_RECEIVER = "WaitAsReceiver";

export function validateVirtualMachine(input: unknown, sources: ExpansionSources = {}): Validation<VirtualMachine> {
  if ((input as { spec?: { runStrategy?: unknown } } | null)?.spec?.runStrategy === WAIT_AS_RECEIVER) {
    const causes = new Causes();
    causes.notSupported(
      "spec.runStrategy",
      `is ${WAIT_AS_RECEIVER}, which has a VM wait for a live migration from another cluster, and ` +
        "kubevirt-ts migrates only within its cluster; use Always, RerunOnFailure, Manual, Halted or Once",
    );
    return { ok: false, causes: causes.list };
  }
  const parsed = parse(virtualMachine, input);
  if (!parsed.ok) return parsed;
  const vm = parsed.value;
  const causes = new Causes();
  validateObjectName(vm.metadata, causes);
  if (vm.spec.running !== undefined && vm.spec.runStrategy !== undefined) {
    causes.invalid(
      "spec.running",
      "and spec.runStrategy are mutually exclusive; spec.running is deprecated, so remove it and keep spec.runStrategy",
    );
  } else if (vm.spec.running === undefined && vm.spec.runStrategy === undefined) {
    causes.required("spec.runStrategy", `must be set to one of: ${RUN_STRATEGIES.join(", ")}`);
  }
  for (const which of ["instancetype", "preference"] as const) {
    // virt-api's mutating webhook resolves it before any validation; what is left of it was not resolved.
    if (vm.spec[which]?.inferFromVolume !== undefined) {
      causes.invalid(
        `spec.${which}.inferFromVolume`,
        "was not resolved: virt-api's mutating webhook infers the name from the volume and removes this " +
          "field; check that the webhook kubevirt-ts-virtualmachines is installed, or name the " +
          which,
      );
    }
  }
  const template = vm.spec.template;
  refuseHookSidecars(template.metadata?.annotations, "spec.template.metadata.annotations", causes);
  const expanded = expandVmiSpec(
    { spec: template.spec, annotations: template.metadata?.annotations },
    sources,
    "spec.template.spec",
    causes,
  );
  // An instancetype gives the memory: when it is not found yet, or conflicts, nothing more is said of memory here.
  validateVmiSpecRules(expanded.spec, "spec.template.spec", causes, vm.spec.instancetype !== undefined);
  validateDataVolumeTemplates(vm, causes);
  return finish(vm, causes);
}

/** The apiVersions a dataVolumeTemplate may name: CDI's, current and earlier (whose DataVolume has the same shape). */
const DATA_VOLUME_TEMPLATE_API_VERSIONS = ["cdi.kubevirt.io/v1beta1", "cdi.kubevirt.io/v1alpha1"];

/**
 * KubeVirt's rules for a VM's dataVolumeTemplates: each is a valid DataVolume of the VM's namespace that a volume
 * names.
 */
function validateDataVolumeTemplates(vm: VirtualMachine, causes: Causes): void {
  const named = new Set(
    (vm.spec.template.spec.volumes ?? []).flatMap((v) => (v.dataVolume ? [v.dataVolume.name] : [])),
  );
  const seen = new Set<string>();
  (vm.spec.dataVolumeTemplates ?? []).forEach((template, i) => {
    const path = `spec.dataVolumeTemplates[${i}]`;
    const { name, namespace } = template.metadata;
    // Informational in KubeVirt, which always makes a cdi.kubevirt.io DataVolume; anything else is refused rather than
    // ignored.
    if (template.apiVersion !== undefined && !DATA_VOLUME_TEMPLATE_API_VERSIONS.includes(template.apiVersion)) {
      causes.invalid(
        `${path}.apiVersion`,
        `is ${JSON.stringify(template.apiVersion)}; a template makes a DataVolume ` +
          `of ${DATA_VOLUME_TEMPLATE_API_VERSIONS.join(" or ")}: use one or leave it out`,
      );
    }
    if (template.kind !== undefined && template.kind !== "DataVolume") {
      causes.invalid(
        `${path}.kind`,
        `is ${JSON.stringify(template.kind)}; a template makes a DataVolume: set kind: DataVolume or leave it out`,
      );
    }
    const problem = dnsSubdomainProblem(name);
    if (problem) causes.invalid(`${path}.metadata.name`, problem);
    if (seen.has(name))
      causes.duplicate(
        `${path}.metadata.name`,
        `"${name}" is the name of an earlier template; each DataVolume needs a name of its own`,
      );
    seen.add(name);
    if (namespace !== undefined && vm.metadata.namespace !== undefined && namespace !== vm.metadata.namespace) {
      causes.invalid(
        `${path}.metadata.namespace`,
        `is ${JSON.stringify(namespace)}; a VM's DataVolumes are in its own namespace ` +
          `(${vm.metadata.namespace}): remove it`,
      );
    }
    if (!named.has(name)) {
      causes.invalid(
        `${path}.metadata.name`,
        `"${name}" is named by no volume; add a volume with dataVolume.name: ${name} to ` +
          "spec.template.spec.volumes, or remove the template",
      );
    }
    validateDataVolumeSpec(template.spec, `${path}.spec`, vm.metadata.namespace, causes);
  });
}

/**
 * Validates a VirtualMachineInstanceMigration's shape: fields kubevirt-ts does not act on (KubeVirt's sendTo and
 * receive, for migrations between clusters) are refused by path. Whether its VMI may move is the webhook's to ask.
 */
export function validateMigration(input: unknown): Validation<VirtualMachineInstanceMigration> {
  return parse(virtualMachineInstanceMigration, input);
}

/**
 * Validates a MigrationPolicy: its shape (a field kubevirt-ts does not act on is refused by path), no negative
 * bandwidth or completion time, and no workload disruption that would need the guest paused: kubevirt-ts finishes a
 * late migration by post-copy or not at all.
 */
export function validateMigrationPolicy(input: unknown): Validation<MigrationPolicy> {
  const parsed = parse(migrationPolicy, input);
  if (!parsed.ok) return parsed;
  const { spec } = parsed.value;
  const causes = new Causes();
  if (spec.bandwidthPerMigration !== undefined && (parseQuantity(spec.bandwidthPerMigration) ?? 0) < 0) {
    causes.invalid(
      "spec.bandwidthPerMigration",
      `is ${String(spec.bandwidthPerMigration)}; give the bandwidth per second one ` +
        "migration may use, such as 64Mi, or 0 for no limit",
    );
  }
  if (spec.completionTimeoutPerGiB !== undefined && spec.completionTimeoutPerGiB < 0) {
    causes.invalid(
      "spec.completionTimeoutPerGiB",
      `is ${String(spec.completionTimeoutPerGiB)}; give the seconds a migration may take ` +
        "per GiB copied, such as 150, or 0 for no limit",
    );
  }
  if (spec.allowWorkloadDisruption === true && spec.allowPostCopy !== true) {
    causes.invalid(
      "spec.allowWorkloadDisruption",
      "is true without allowPostCopy: true, which would have the guest paused to finish a late migration, " +
        "and kubevirt-ts does not pause guests for that; set allowPostCopy: true as well (post-copy finishes " +
        "it), or remove allowWorkloadDisruption",
    );
  }
  return finish(parsed.value, causes);
}

/**
 * Validates a KubeVirt CR: its shape (anything kubevirt-ts does not act on refused by path), and that it is the one
 * kubevirt-ts reads, KUBEVIRT_CR_NAME in the release namespace: any other would have no effect.
 */
export function validateKubeVirt(input: unknown, installNamespace: string): Validation<KubeVirt> {
  const parsed = parse(kubeVirt, input);
  if (!parsed.ok) return parsed;
  const { metadata, spec } = parsed.value;
  const causes = new Causes();
  if (
    metadata.name !== KUBEVIRT_CR_NAME ||
    (metadata.namespace !== undefined && metadata.namespace !== installNamespace)
  ) {
    causes.invalid(
      "metadata.name",
      `is ${metadata.namespace ?? installNamespace}/${metadata.name ?? ""}, but kubevirt-ts reads one ` +
        `KubeVirt CR, ${installNamespace}/${KUBEVIRT_CR_NAME} (the chart makes it): change that one instead`,
    );
  }
  const bandwidth = spec.configuration.migrations?.bandwidthPerMigration;
  if (bandwidth !== undefined && (parseQuantity(bandwidth) ?? -1) < 0) {
    causes.invalid(
      "spec.configuration.migrations.bandwidthPerMigration",
      `is ${String(bandwidth)}; give the bandwidth per second one migration may use, such as 64Mi, or 0 for no limit`,
    );
  }
  return finish(parsed.value, causes);
}

/** Validates a DataVolume where kubevirt-ts serves the kind: its shape, then CDI's rules and kubevirt-ts's limits. */
export function validateDataVolume(input: unknown): Validation<DataVolume> {
  const parsed = parse(dataVolume, input);
  if (!parsed.ok) return parsed;
  const dv = parsed.value;
  const causes = new Causes();
  if (dv.metadata.name !== undefined) {
    const problem = dnsSubdomainProblem(dv.metadata.name);
    if (problem) causes.invalid("metadata.name", problem);
  }
  validateDataVolumeSpec(dv.spec, "spec", dv.metadata.namespace, causes);
  return finish(dv, causes);
}
