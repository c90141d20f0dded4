import type { z } from "zod";
import {
  DEPRECATED_VERSION,
  GROUP,
  KUBEVIRT_KIND,
  KubeVirtResource,
  INSTANCETYPE_API_VERSION,
  INSTANCETYPE_GROUP,
  INSTANCETYPE_VERSION,
  InstancetypeKind,
  InstancetypeResource,
  Kind,
  MIGRATIONS_GROUP,
  MIGRATIONS_VERSION,
  MIGRATION_POLICY_KIND,
  MigrationPolicyResource,
  PART_OF_LABELS,
  Resource,
  VERSION,
} from "../constants.ts";
import {
  CDI_GROUP,
  CDI_VERSION,
  cdiConfigSpec,
  cdiConfigStatus,
  dataVolumeSpec,
  dataVolumeStatus,
} from "../schema/datavolume.ts";
import {
  EXPORT_GROUP,
  EXPORT_KIND,
  EXPORT_VERSION,
  ExportResource,
  virtualMachineExportSpec,
  virtualMachineExportStatus,
} from "../schema/export.ts";
import { instancetypeSpec, preferenceSpec } from "../schema/instancetype.ts";
import { vmSpec, vmStatus } from "../schema/vm.ts";
import { vmiSpec, vmiStatus } from "../schema/vmi.ts";
import { migrationSpec, migrationStatus } from "../schema/migration.ts";
import { migrationPolicySpec } from "../schema/migration-policy.ts";
import { kubeVirtSpec, kubeVirtStatus } from "../schema/kubevirt.ts";
import {
  SNAPSHOT_GROUP,
  SNAPSHOT_VERSION,
  SPEC_IMMUTABLE,
  SnapshotKind,
  SnapshotResource,
  virtualMachineRestoreSpec,
  virtualMachineRestoreStatus,
  virtualMachineSnapshotContentSpec,
  virtualMachineSnapshotContentStatus,
  virtualMachineSnapshotSpec,
  virtualMachineSnapshotStatus,
} from "../schema/snapshot.ts";
import {
  CLONE_GROUP,
  CLONE_KIND,
  CLONE_VERSION,
  CloneResource,
  virtualMachineCloneSpec,
  virtualMachineCloneStatus,
} from "../schema/clone.ts";
import { kubevirtResources } from "../resources.ts";
import { type OpenApiSchema, toStructuralSchema } from "./openapi.ts";

// The CustomResourceDefinitions of kubevirt.io/v1, built from the zod schemas
// so that the API server and our validation never disagree about the shape.

interface PrinterColumn {
  name: string;
  type: "string" | "date" | "integer" | "boolean";
  jsonPath: string;
  description?: string;
  priority?: number;
}

const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
const ready: PrinterColumn = {
  name: "Ready",
  type: "string",
  jsonPath: ".status.conditions[?(@.type=='Ready')].status",
};

interface CrdInput {
  kind: string;
  names: { plural: string; singular: string; shortNames: readonly string[] };
  group: string;
  version: string;
  scope: "Namespaced" | "Cluster";
  description: string;
  spec: z.ZodType;
  status?: z.ZodType;
  columns: PrinterColumn[];
  /** Whether status is a subresource: kubevirtResources says, for the clients, as KubeVirt's CRDs do. */
  statusSubresource: boolean;
  specValidations?: { rule: string; message: string }[];
  annotations?: Record<string, string>;
  /**
   * Older versions served with the same schema, never stored (KubeVirt's v1alpha3), each with its deprecation warning.
   */
  deprecatedVersions?: readonly { name: string; warning: string }[];
  /** Further versions served with the same schema, neither stored nor deprecated. */
  alsoServed?: readonly string[];
}

function crd(input: CrdInput): Record<string, unknown> {
  const { names, group } = input;
  const specSchema: OpenApiSchema = toStructuralSchema(input.spec);
  if (input.specValidations) specSchema["x-kubernetes-validations"] = input.specValidations;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${names.plural}.${group}`,
      labels: { ...PART_OF_LABELS },
      ...(input.annotations ? { annotations: input.annotations } : {}),
    },
    spec: {
      group,
      names: {
        kind: input.kind,
        listKind: `${input.kind}List`,
        plural: names.plural,
        singular: names.singular,
        shortNames: [...names.shortNames],
        categories:
          input.scope === "Namespaced" && [GROUP, CDI_GROUP, SNAPSHOT_GROUP, CLONE_GROUP, EXPORT_GROUP].includes(group)
            ? ["all"]
            : [],
      },
      scope: input.scope,
      versions: [
        input.version,
        ...(input.alsoServed ?? []),
        ...(input.deprecatedVersions ?? []).map((v) => v.name),
      ].map((name) => {
        const deprecated = input.deprecatedVersions?.find((v) => v.name === name);
        return {
          name,
          served: true,
          storage: name === input.version,
          ...(deprecated ? { deprecated: true, deprecationWarning: deprecated.warning } : {}),
          subresources: input.statusSubresource ? { status: {} } : {},
          additionalPrinterColumns: input.columns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: input.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string", description: `Always ${group}/${name}.` },
                kind: { type: "string", description: `Always ${input.kind}.` },
                metadata: { type: "object" },
                spec: specSchema,
                ...(input.status ? { status: toStructuralSchema(input.status) } : {}),
              },
            },
          },
        };
      }),
    },
  };
}

const kubevirtKind = (kind: Kind) => ({
  kind,
  names: Resource[kind],
  group: GROUP,
  version: VERSION,
  deprecatedVersions: [DEPRECATED_VERSION],
  scope: "Namespaced" as const,
});

export const virtualMachineCrd = crd({
  ...kubevirtKind(Kind.VirtualMachine),
  description:
    "A virtual machine: its template, and when it should run. It creates a VirtualMachineInstance when it runs.",
  spec: vmSpec,
  status: vmStatus,
  statusSubresource: kubevirtResources.virtualMachines.statusSubresource,
  columns: [
    age,
    { name: "Status", type: "string", jsonPath: ".status.printableStatus", description: "Human Readable Status" },
    ready,
  ],
  specValidations: [
    {
      rule: "!(has(self.running) && has(self.runStrategy))",
      message:
        "spec.running and spec.runStrategy are mutually exclusive; spec.running is " +
        "deprecated, keep only spec.runStrategy",
    },
  ],
});

export const virtualMachineInstanceCrd = crd({
  ...kubevirtKind(Kind.VirtualMachineInstance),
  description: "A running instance of a virtual machine: one guest in one launcher pod.",
  spec: vmiSpec,
  status: vmiStatus,
  statusSubresource: kubevirtResources.virtualMachineInstances.statusSubresource,
  columns: [
    age,
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "IP", type: "string", jsonPath: ".status.interfaces[0].ipAddress" },
    { name: "NodeName", type: "string", jsonPath: ".status.nodeName" },
    ready,
    { name: "Paused", type: "string", jsonPath: ".status.conditions[?(@.type=='Paused')].status", priority: 1 },
  ],
});

export const virtualMachineInstanceMigrationCrd = crd({
  ...kubevirtKind(Kind.VirtualMachineInstanceMigration),
  description: "A live migration of a VirtualMachineInstance to another node: deleting it while it runs cancels it.",
  spec: migrationSpec,
  status: migrationStatus,
  statusSubresource: kubevirtResources.virtualMachineInstanceMigrations.statusSubresource,
  columns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "VMI", type: "string", jsonPath: ".spec.vmiName" },
  ],
});

/**
 * KubeVirt's installation CR: the cluster's live configuration (cluster-config.ts), its status from virt-controller.
 */
export const kubeVirtCrd = crd({
  kind: KUBEVIRT_KIND,
  names: KubeVirtResource,
  group: GROUP,
  version: VERSION,
  deprecatedVersions: [DEPRECATED_VERSION],
  scope: "Namespaced",
  description:
    "The kubevirt-ts installation: the cluster's configuration, which every component " +
    "applies live, and how its components are.",
  spec: kubeVirtSpec,
  status: kubeVirtStatus,
  statusSubresource: kubevirtResources.kubeVirts.statusSubresource,
  columns: [age, { name: "Phase", type: "string", jsonPath: ".status.phase" }],
});

/** KubeVirt's MigrationPolicy: cluster-scoped, its status empty. */
export const migrationPolicyCrd = crd({
  kind: MIGRATION_POLICY_KIND,
  names: MigrationPolicyResource,
  group: MIGRATIONS_GROUP,
  version: MIGRATIONS_VERSION,
  scope: "Cluster",
  description:
    "A cluster administrator's migration settings (bandwidth, completion time, post-copy, " +
    "auto-converge) for the VMIs its selectors match.",
  spec: migrationPolicySpec,
  statusSubresource: kubevirtResources.migrationPolicies.statusSubresource,
  columns: [age],
});

const instancetypeKind = (kind: InstancetypeKind) => {
  const { namespaced, ...names } = InstancetypeResource[kind];
  return {
    kind,
    names,
    group: INSTANCETYPE_GROUP,
    version: INSTANCETYPE_VERSION,
    scope: namespaced ? ("Namespaced" as const) : ("Cluster" as const),
    statusSubresource: false,
  };
};
const sizeColumns: PrinterColumn[] = [
  { name: "vCPUs", type: "integer", jsonPath: ".spec.cpu.guest" },
  { name: "Memory", type: "string", jsonPath: ".spec.memory.guest" },
  age,
];
const INSTANCETYPE =
  `An ${INSTANCETYPE_API_VERSION} size: the vCPUs and memory of the VMs ` + "that name it in spec.instancetype";
const PREFERENCE =
  `An ${INSTANCETYPE_API_VERSION} preference: the devices, firmware and CPU layout a guest OS ` +
  "prefers, for the VMs that name it in spec.preference";

export const instancetypeCrds = [
  crd({
    ...instancetypeKind(InstancetypeKind.Instancetype),
    description: `${INSTANCETYPE}, in one namespace.`,
    spec: instancetypeSpec,
    columns: sizeColumns,
  }),
  crd({
    ...instancetypeKind(InstancetypeKind.ClusterInstancetype),
    description: `${INSTANCETYPE}, for every namespace.`,
    spec: instancetypeSpec,
    columns: sizeColumns,
  }),
  crd({
    ...instancetypeKind(InstancetypeKind.Preference),
    description: `${PREFERENCE}, in one namespace.`,
    spec: preferenceSpec,
    columns: [age],
  }),
  crd({
    ...instancetypeKind(InstancetypeKind.ClusterPreference),
    description: `${PREFERENCE}, for every namespace.`,
    spec: preferenceSpec,
    columns: [age],
  }),
];

/**
 * CDI's DataVolume, the part kubevirt-ts serves where CDI is not installed: not in the chart's crds/ folder (which is
 * always installed), but in its files/, which a template installs when CDI's own CRD is absent (docs/storage.md).
 */
export const dataVolumeCrd = crd({
  kind: "DataVolume",
  names: { plural: "datavolumes", singular: "datavolume", shortNames: ["dv", "dvs"] },
  group: CDI_GROUP,
  version: CDI_VERSION,
  scope: "Namespaced",
  description:
    "A PersistentVolumeClaim and the disk image to fill it with (CDI's DataVolume, " +
    "served by kubevirt-ts where CDI is not installed).",
  spec: dataVolumeSpec,
  status: dataVolumeStatus,
  statusSubresource: true,
  // Helm installs it as a template: an uninstall must not take the DataVolumes (and so the disks) with it.
  annotations: { "helm.sh/resource-policy": "keep" },
  columns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase", description: "The phase the DataVolume is in" },
    { name: "Progress", type: "string", jsonPath: ".status.progress", description: "How much of the source is in" },
    {
      name: "Restarts",
      type: "integer",
      jsonPath: ".status.restartCount",
      description: "How many times the importer restarted",
    },
    age,
  ],
});

const snapshotKind = (kind: keyof typeof SnapshotKind) => ({
  kind: SnapshotKind[kind],
  names: SnapshotResource[kind],
  group: SNAPSHOT_GROUP,
  version: SNAPSHOT_VERSION,
  scope: "Namespaced" as const,
  statusSubresource: true,
  specValidations: [SPEC_IMMUTABLE],
});
const creationTime: PrinterColumn = { name: "CreationTime", type: "date", jsonPath: ".status.creationTime" };
const readyToUse: PrinterColumn = { name: "ReadyToUse", type: "boolean", jsonPath: ".status.readyToUse" };
const errorMessage: PrinterColumn = { name: "Error", type: "string", jsonPath: ".status.error.message" };

/** KubeVirt's snapshot.kubevirt.io kinds, with its printer columns (docs/adr/0027). */
export const snapshotCrds = [
  crd({
    ...snapshotKind("VirtualMachineSnapshot"),
    description: "A snapshot of a VirtualMachine: the VM as it is and a copy of each of its disks, taken now.",
    spec: virtualMachineSnapshotSpec,
    status: virtualMachineSnapshotStatus,
    columns: [
      { name: "SourceKind", type: "string", jsonPath: ".spec.source.kind" },
      { name: "SourceName", type: "string", jsonPath: ".spec.source.name" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      readyToUse,
      creationTime,
      errorMessage,
    ],
  }),
  crd({
    ...snapshotKind("VirtualMachineSnapshotContent"),
    description: "What a VirtualMachineSnapshot took: the VM as it was, and where each of its disks' copies is.",
    spec: virtualMachineSnapshotContentSpec,
    status: virtualMachineSnapshotContentStatus,
    columns: [readyToUse, creationTime, errorMessage],
  }),
  crd({
    ...snapshotKind("VirtualMachineRestore"),
    description: "A restore of a VirtualMachineSnapshot onto its VM, or onto a new VM.",
    spec: virtualMachineRestoreSpec,
    status: virtualMachineRestoreStatus,
    columns: [
      { name: "TargetKind", type: "string", jsonPath: ".spec.target.kind" },
      { name: "TargetName", type: "string", jsonPath: ".spec.target.name" },
      { name: "Complete", type: "boolean", jsonPath: ".status.complete" },
      { name: "RestoreTime", type: "date", jsonPath: ".status.restoreTime" },
    ],
  }),
];

/** KubeVirt's VirtualMachineClone, with v1alpha1 (the version older virtctl writes) served as a deprecated alias. */
export const cloneCrd = crd({
  kind: CLONE_KIND,
  names: CloneResource,
  group: CLONE_GROUP,
  version: CLONE_VERSION,
  scope: "Namespaced",
  statusSubresource: true,
  specValidations: [SPEC_IMMUTABLE],
  deprecatedVersions: [
    { name: "v1alpha1", warning: "clone.kubevirt.io/v1alpha1 VirtualMachineClone is deprecated; use v1beta1" },
  ],
  description: "A clone of a VirtualMachine or a VirtualMachineSnapshot into a new VirtualMachine.",
  spec: virtualMachineCloneSpec,
  status: virtualMachineCloneStatus,
  columns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "SourceVirtualMachine", type: "string", jsonPath: ".spec.source.name" },
    // The new VM's name once the clone named it (KubeVirt's admission writes a generated one into spec.target).
    { name: "TargetVirtualMachine", type: "string", jsonPath: ".status.targetName" },
  ],
});

/** KubeVirt's VirtualMachineExport: v1beta1 stored, v1 (which newer virtctl writes) served alike. */
export const exportCrd = crd({
  kind: EXPORT_KIND,
  names: ExportResource,
  group: EXPORT_GROUP,
  version: EXPORT_VERSION,
  alsoServed: ["v1"],
  scope: "Namespaced",
  statusSubresource: true,
  specValidations: [
    SPEC_IMMUTABLE,
    {
      rule:
        "(self.source.kind == 'VirtualMachine' && (!has(self.source.apiGroup) || self.source.apiGroup == " +
        "'kubevirt.io')) || (self.source.kind == 'VirtualMachineSnapshot' && (!has(self.source.apiGroup) || " +
        "self.source.apiGroup == 'snapshot.kubevirt.io')) || (self.source.kind == 'PersistentVolumeClaim' && " +
        "(!has(self.source.apiGroup) || self.source.apiGroup == ''))",
      message:
        "spec.source.apiGroup does not match spec.source.kind: kubevirt.io for VirtualMachine, snapshot.kubevirt.io " +
        'for VirtualMachineSnapshot, "" for PersistentVolumeClaim',
    },
  ],
  description: "An export of a VirtualMachine's, a VirtualMachineSnapshot's or a claim's disks for download.",
  spec: virtualMachineExportSpec,
  status: virtualMachineExportStatus,
  columns: [
    { name: "SourceKind", type: "string", jsonPath: ".spec.source.kind" },
    { name: "SourceName", type: "string", jsonPath: ".spec.source.name" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
  ],
});

const crdFileName = (c: Record<string, unknown>) => {
  const name = (c.metadata as { name: string }).name;
  const dot = name.indexOf(".");
  return `${name.slice(dot + 1)}_${name.slice(0, dot)}.yaml`;
};
const HEADER = "# Generated from packages/kubevirt-api by `npm run generate`; do not edit.\n";

/** The generated files, by path relative to the chart's crds/ folder. */
export function renderCrdFiles(toYaml: (value: unknown) => string): Map<string, string> {
  return new Map(
    [
      virtualMachineCrd,
      virtualMachineInstanceCrd,
      virtualMachineInstanceMigrationCrd,
      kubeVirtCrd,
      migrationPolicyCrd,
      ...instancetypeCrds,
      ...snapshotCrds,
      cloneCrd,
      exportCrd,
    ].map((c) => [crdFileName(c), HEADER + toYaml(c)]),
  );
}

/**
 * CDI's CDIConfig, cluster-scoped, installed with the DataVolume kind: the controller keeps the one named `config`,
 * whose status tells clients the upload proxy's address (docs/storage.md).
 */
export const cdiConfigCrd = crd({
  kind: "CDIConfig",
  names: { plural: "cdiconfigs", singular: "cdiconfig", shortNames: [] },
  group: CDI_GROUP,
  version: CDI_VERSION,
  scope: "Cluster",
  description:
    "CDI's cluster-wide configuration, served by kubevirt-ts where CDI is not installed for the upload proxy's " +
    "address; kubevirt-ts keeps the one named config.",
  spec: cdiConfigSpec,
  status: cdiConfigStatus,
  statusSubresource: true,
  columns: [age],
});

/** The CRDs the chart installs only when no one else serves them, by path relative to its files/ folder. */
export function renderOptionalCrdFiles(toYaml: (value: unknown) => string): Map<string, string> {
  return new Map([dataVolumeCrd, cdiConfigCrd].map((c) => [crdFileName(c), HEADER + toYaml(c)]));
}
