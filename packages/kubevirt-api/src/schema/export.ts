import { z } from "zod";
import { condition, objectMeta } from "./common.ts";
import { SnapshotKind, SNAPSHOT_GROUP, duration } from "./snapshot.ts";

// KubeVirt's export.kubevirt.io VirtualMachineExport: a VM's, a snapshot's or a claim's disks served for download by
// an export server pod behind a token, with links inside the cluster (the export's Service) and outside it (the
// dashboard's address, through virt-api's export proxy). v1beta1 is stored; v1, which newer virtctl writes, is served
// with the same schema. Names, phases, reasons and link formats are KubeVirt's, so `virtctl vmexport` works unchanged
// (docs/data-protection.md).

export const EXPORT_GROUP = "export.kubevirt.io";
export const EXPORT_VERSION = "v1beta1";
export const EXPORT_API_VERSION = `${EXPORT_GROUP}/${EXPORT_VERSION}`;
export const EXPORT_KIND = "VirtualMachineExport";
export const ExportResource = {
  plural: "virtualmachineexports",
  singular: "virtualmachineexport",
  shortNames: ["vmexport", "vmexports"],
} as const;

export const ExportPhase = {
  Pending: "Pending",
  Ready: "Ready",
  Terminated: "Terminated",
  Skipped: "Skipped",
} as const;
export type ExportPhase = (typeof ExportPhase)[keyof typeof ExportPhase];

/** KubeVirt's reasons on the export's Ready and PVCReady conditions. */
export const ExportReason = {
  Initializing: "Initializing",
  PodReady: "PodReady",
  PodPending: "PodPending",
  PodCompleted: "PodCompleted",
  InUse: "InUse",
  Unknown: "Unknown",
  PVCNotFound: "PVCNotFound",
  PVCBound: "PVCBound",
  PVCPending: "PVCPending",
  VMNotFound: "VMNotFound",
  VMNoVolumes: "VMNoVolumes",
  VolumesNotPopulated: "VolumesNotPopulated",
  VMSnapshotNotFound: "VMSnapshotNotFound",
  VMSnapshotNoVolumes: "VMSnapshotNoVolumes",
} as const;

/** The kinds an export takes its disks from, each with its API group (the empty core group for a claim). */
export const ExportSourceKind = {
  VirtualMachine: "kubevirt.io",
  [SnapshotKind.VirtualMachineSnapshot]: SNAPSHOT_GROUP,
  PersistentVolumeClaim: "",
} as const;
export type ExportSourceKind = keyof typeof ExportSourceKind;

/** The longest ttlDuration taken: a week; an export's token opens its disks for that long. */
export const MAX_EXPORT_TTL_HOURS = 168;

export const virtualMachineExportSpec = z
  .strictObject({
    source: z
      .strictObject({
        apiGroup: z
          .string()
          .max(253)
          .optional()
          .describe('kubevirt.io, snapshot.kubevirt.io, or "" (or unset) for a PersistentVolumeClaim.'),
        kind: z
          .enum(Object.keys(ExportSourceKind) as [ExportSourceKind, ...ExportSourceKind[]])
          .describe("VirtualMachine (stopped), VirtualMachineSnapshot (ready), or PersistentVolumeClaim (unused)."),
        name: z.string().min(1).max(253).describe("Its name, in the export's namespace."),
      })
      .describe("What is exported."),
    tokenSecretRef: z
      .string()
      .max(253)
      .optional()
      .describe(
        "The Secret whose `token` key a download must present (header x-kubevirt-export-token); unset, the " +
          "controller makes export-token-<name> with a random token.",
      ),
    ttlDuration: duration
      .optional()
      .describe(`How long the export lives from its creation (default 2h, at most ${String(MAX_EXPORT_TTL_HOURS)}h).`),
  })
  .describe("What is exported, behind which token, for how long.");

const link = z.object({
  cert: z.string().describe("The PEM certificate that verifies the link's server; empty: the system's roots."),
  volumes: z
    .array(
      z.object({
        name: z.string(),
        formats: z.array(z.object({ format: z.string(), url: z.string() })).optional(),
      }),
    )
    .optional(),
  manifests: z.array(z.object({ type: z.string(), url: z.string() })).optional(),
});

export const virtualMachineExportStatus = z.object({
  phase: z.enum(Object.values(ExportPhase) as [ExportPhase, ...ExportPhase[]]).optional(),
  links: z
    .object({
      internal: link.optional().describe("From inside the cluster: the export's Service."),
      external: link.optional().describe("From outside: the dashboard's address, through virt-api's export proxy."),
    })
    .optional(),
  tokenSecretRef: z.string().optional().describe("The Secret holding the token downloads present."),
  ttlExpirationTime: z.string().optional().describe("When the export is deleted."),
  serviceName: z.string().optional().describe("The export server's Service."),
  virtualMachineName: z.string().optional().describe("The VM exported, for a VM or snapshot source."),
  conditions: z.array(condition).optional(),
});

export const virtualMachineExport = z.object({
  apiVersion: z.string(),
  kind: z.literal(EXPORT_KIND),
  metadata: objectMeta,
  spec: virtualMachineExportSpec,
  status: virtualMachineExportStatus.optional(),
});

export type VirtualMachineExportSpec = z.infer<typeof virtualMachineExportSpec>;
export type VirtualMachineExportStatus = z.infer<typeof virtualMachineExportStatus>;
export type VirtualMachineExport = z.infer<typeof virtualMachineExport>;
