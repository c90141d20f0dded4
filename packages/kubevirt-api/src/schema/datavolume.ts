import { z } from "zod";

/** The most Secrets an http source's secretExtraHeaders names. */
export const MAX_SECRET_EXTRA_HEADERS = 8;
import { condition, objectMeta, quantity } from "./common.ts";

// CDI's DataVolume (cdi.kubevirt.io/v1beta1): a claim and where its disk
// comes from. The names and shapes are CDI's, so a manifest written for CDI
// reads the same here. kubevirt-ts serves the kind itself only where CDI is
// not installed (docs/storage.md); then a field it cannot give its effect is
// left out of the schema, so the API server refuses it by path.

export const CDI_GROUP = "cdi.kubevirt.io";
export const CDI_VERSION = "v1beta1";
export const CDI_API_VERSION = `${CDI_GROUP}/${CDI_VERSION}`;
/** CDI's aggregated API that hands out upload tokens (UploadTokenRequest). */
export const UPLOAD_GROUP = "upload.cdi.kubevirt.io";

/** CDI's DataVolume phases. */
export const DataVolumePhase = {
  Pending: "Pending",
  PVCBound: "PVCBound",
  ImportScheduled: "ImportScheduled",
  ImportInProgress: "ImportInProgress",
  CloneScheduled: "CloneScheduled",
  CloneInProgress: "CloneInProgress",
  UploadScheduled: "UploadScheduled",
  UploadReady: "UploadReady",
  WaitForFirstConsumer: "WaitForFirstConsumer",
  PendingPopulation: "PendingPopulation",
  Succeeded: "Succeeded",
  Failed: "Failed",
  Unknown: "Unknown",
  Paused: "Paused",
} as const;
export type DataVolumePhase = (typeof DataVolumePhase)[keyof typeof DataVolumePhase];

/** CDI's DataVolume conditions. */
export const DataVolumeConditionType = { Bound: "Bound", Running: "Running", Ready: "Ready" } as const;

const secretRef = z.string().describe("A Secret in the DataVolume's namespace.");

export const dataVolumeSource = z
  .strictObject({
    http: z
      .strictObject({
        url: z.string().describe("Where the image is, http or https: qcow2, raw or an ISO, gzip-compressed or not."),
        secretRef: secretRef
          .optional()
          .describe("A Secret with accessKeyId and secretKey, sent as basic authentication."),
        extraHeaders: z.array(z.string()).optional().describe("More request headers, each as 'Name: value'."),
        secretExtraHeaders: z
          .array(z.string().min(1).max(253))
          .max(MAX_SECRET_EXTRA_HEADERS)
          .optional()
          .describe("Secrets in the DataVolume's namespace whose every value is one more header, as 'Name: value'."),
        certConfigMap: z
          .string()
          .min(1)
          .max(253)
          .optional()
          .describe(
            "A ConfigMap in the DataVolume's namespace whose values are the PEM certificates that verify the server.",
          ),
      })
      .optional()
      .describe("A disk image downloaded over HTTP."),
    registry: z
      .strictObject({
        url: z.string().describe("docker://<image>: a containerDisk image, whose disk (under /disk) is copied in."),
        pullMethod: z
          .enum(["pod"])
          .optional()
          .describe("How the image is pulled: by the importer pod's runtime (pod, the only way here)."),
      })
      .optional()
      .describe("A disk from a containerDisk image."),
    pvc: z
      .strictObject({
        namespace: z.string().describe("The source claim's namespace: the DataVolume's own."),
        name: z.string().describe("The source claim."),
      })
      .optional()
      .describe("A copy of another claim's disk."),
    blank: z.strictObject({}).optional().describe("An empty disk of the requested size."),
    upload: z
      .strictObject({})
      .optional()
      .describe("A disk image uploaded through the upload proxy (virtctl image-upload, the dashboard's Images page)."),
  })
  .describe("Where the disk's content comes from: exactly one source.");

const claimSpec = (what: string) =>
  z
    .strictObject({
      accessModes: z
        .array(z.enum(["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]))
        .optional()
        .describe("The claim's access modes; ReadWriteOnce when unset."),
      volumeMode: z
        .enum(["Filesystem"])
        .optional()
        .describe("Filesystem, the only mode kubevirt-ts attaches (docs/storage.md)."),
      storageClassName: z.string().optional().describe("The claim's StorageClass; the cluster's default when unset."),
      resources: z.strictObject({ requests: z.strictObject({ storage: quantity.describe(what) }) }).optional(),
    })
    .describe("The claim to make.");

export const dataVolumeSpec = z
  .strictObject({
    source: dataVolumeSource.optional(),
    pvc: claimSpec("The claim's size, the file system's overhead included.")
      .optional()
      .describe("The claim to make, as a PersistentVolumeClaim's spec: its size is the claim's."),
    storage: claimSpec("The disk's size: room for the file system's overhead is added to the claim.")
      .optional()
      .describe("The claim to make, CDI's storage API: its size is the disk's."),
    contentType: z
      .enum(["kubevirt"])
      .optional()
      .describe("kubevirt: the content is a disk image (the only type here)."),
  })
  .describe("A claim, and the disk to fill it with.");

export const dataVolumeStatus = z.object({
  phase: z
    .enum(Object.values(DataVolumePhase) as [DataVolumePhase, ...DataVolumePhase[]])
    .optional()
    .describe("Where the DataVolume is: Succeeded once its disk is in."),
  progress: z.string().optional().describe("How much of the source is in, as 45.12%, or N/A."),
  restartCount: z.number().int().optional().describe("How many times the importer was restarted after a failure."),
  claimName: z.string().optional().describe("The claim that holds the disk."),
  conditions: z.array(condition).optional(),
});

export const dataVolume = z.object({
  apiVersion: z.literal(CDI_API_VERSION),
  kind: z.literal("DataVolume"),
  metadata: objectMeta,
  spec: dataVolumeSpec,
  status: dataVolumeStatus.optional(),
});

/** A VM's spec.dataVolumeTemplates[]: a DataVolume the VM creates and owns. */
export const dataVolumeTemplate = z
  .strictObject({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: z
      .looseObject({
        name: z.string().describe("The DataVolume's name, and its claim's."),
        namespace: z.string().optional().describe("The VM's own namespace, when set."),
        labels: z.record(z.string(), z.string()).optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      })
      .meta({ "x-kubernetes-preserve-unknown-fields": true }),
    spec: dataVolumeSpec,
  })
  .describe("A DataVolume the VM creates and owns, named by a dataVolume volume of its template.");

/**
 * CDI's cluster-wide configuration, kept by kubevirt-ts where it serves DataVolumes, for what clients read of it: the
 * upload proxy's address (virtctl image-upload without --uploadproxy-url). CDI's other settings are left out of the
 * schema, so the API server refuses them by path: kubevirt-ts would not act on them.
 */
export const CDI_CONFIG_NAME = "config";
export const cdiConfigSpec = z.strictObject({
  uploadProxyURLOverride: z
    .string()
    .max(2048)
    .optional()
    .describe("The upload proxy's URL clients use, instead of the one kubevirt-ts reports (the dashboard's address)."),
});
export const cdiConfigStatus = z.object({
  uploadProxyURL: z
    .string()
    .optional()
    .describe("The upload proxy's URL: the override when set, else the dashboard's address (written by kubevirt-ts)."),
});
export const cdiConfig = z.object({
  apiVersion: z.literal(CDI_API_VERSION),
  kind: z.literal("CDIConfig"),
  metadata: objectMeta,
  spec: cdiConfigSpec,
  status: cdiConfigStatus.optional(),
});
export type CdiConfig = z.infer<typeof cdiConfig>;

export type DataVolume = z.infer<typeof dataVolume>;
export type DataVolumeSpec = z.infer<typeof dataVolumeSpec>;
export type DataVolumeStatus = z.infer<typeof dataVolumeStatus>;
export type DataVolumeTemplate = z.infer<typeof dataVolumeTemplate>;
