import { z } from "zod";
import { condition, objectMeta } from "./common.ts";
import { SnapshotKind, SNAPSHOT_GROUP } from "./snapshot.ts";

// KubeVirt's clone.kubevirt.io/v1beta1 VirtualMachineClone: a new VM from a VM or a snapshot, made as KubeVirt makes
// it, through a VirtualMachineSnapshot (of a VM source) and a VirtualMachineRestore to the new VM whose patches carry
// the clone's filters, MACs and SMBIOS serial. Names, enums and phases are KubeVirt's, so `virtctl create clone`
// output applies unchanged; where kubevirt-ts reads a field differently (filters are wildcards, not regular
// expressions) docs/adr/0028 says why.

export const CLONE_GROUP = "clone.kubevirt.io";
export const CLONE_VERSION = "v1beta1";
export const CLONE_API_VERSION = `${CLONE_GROUP}/${CLONE_VERSION}`;
export const CLONE_KIND = "VirtualMachineClone";
export const CloneResource = {
  plural: "virtualmachineclones",
  singular: "virtualmachineclone",
  shortNames: ["vmclone", "vmclones"],
} as const;

export const ClonePhase = {
  Unset: "",
  SnapshotInProgress: "SnapshotInProgress",
  CreatingTargetVM: "CreatingTargetVM",
  RestoreInProgress: "RestoreInProgress",
  Succeeded: "Succeeded",
  Failed: "Failed",
  Unknown: "Unknown",
} as const;
export type ClonePhase = (typeof ClonePhase)[keyof typeof ClonePhase];

/** Bounds on what a tenant writes into a clone: filters and patches are read on every pass of the controller. */
export const MAX_CLONE_FILTERS = 64;
export const MAX_CLONE_FILTER_CHARS = 320;
export const MAX_CLONE_PATCHES = 100;
export const MAX_CLONE_PATCH_CHARS = 16 * 1024;
export const MAX_CLONE_MACS = 32;

const filters = (of: string) =>
  z
    .array(z.string().min(1).max(MAX_CLONE_FILTER_CHARS))
    .max(MAX_CLONE_FILTERS)
    .optional()
    .describe(
      `Which ${of} the new VM keeps: keys matching a filter ("*" is any run of characters), minus those matching a ` +
        `"!" filter. Unset keeps them all; an empty list keeps none.`,
    );

export const virtualMachineCloneSpec = z
  .strictObject({
    source: z
      .strictObject({
        apiGroup: z.enum(["kubevirt.io", SNAPSHOT_GROUP]).optional().describe("kubevirt.io or snapshot.kubevirt.io."),
        kind: z
          .enum(["VirtualMachine", SnapshotKind.VirtualMachineSnapshot])
          .describe("VirtualMachine, or VirtualMachineSnapshot: what is cloned."),
        name: z.string().min(1).describe("Its name, in the clone's namespace."),
      })
      .describe("The VM or snapshot cloned."),
    target: z
      .strictObject({
        apiGroup: z.enum(["kubevirt.io"]).optional().describe("kubevirt.io."),
        kind: z.enum(["VirtualMachine"]).describe("VirtualMachine: the only kind a clone makes."),
        name: z
          .string()
          .max(63)
          .optional()
          .describe("The new VM's name; unset, it is the source VM's name, -clone- and five random characters."),
      })
      .optional()
      .describe("The VM made; it must not exist yet."),
    labelFilters: filters("labels of the VM"),
    annotationFilters: filters("annotations of the VM"),
    template: z
      .strictObject({
        labelFilters: filters("labels of the VM's template"),
        annotationFilters: filters("annotations of the VM's template"),
      })
      .optional()
      .describe("Filters on the VM template's labels and annotations."),
    newMacAddresses: z
      .record(z.string().max(63), z.string().max(32))
      .refine((m) => Object.keys(m).length <= MAX_CLONE_MACS, `at most ${String(MAX_CLONE_MACS)} interfaces`)
      .meta({ maxProperties: MAX_CLONE_MACS })
      .optional()
      .describe("A MAC address by interface name; an interface not named gets a new MAC from libvirt."),
    newSMBiosSerial: z
      .string()
      .max(256)
      .optional()
      .describe("The new VM's SMBIOS serial; unset, the source's serial is dropped."),
    volumeNamePolicy: z
      .enum(["RandomizeNames", "PrefixTargetName"])
      .optional()
      .describe(
        "How the new VM's claims are named: RandomizeNames (restore-<uid>-<volume>, the default) or " +
          "PrefixTargetName (<new VM>-<volume>).",
      ),
    patches: z
      .array(z.string().max(MAX_CLONE_PATCH_CHARS))
      .max(MAX_CLONE_PATCHES)
      .optional()
      .describe(
        'JSON patch operations, each a string, applied to the new VM: {"op": "add", "path": ..., "value": ...}.',
      ),
  })
  .describe("What is cloned, into which VM, and what of it changes.");

export const virtualMachineCloneStatus = z.object({
  creationTime: z.string().nullable().optional().describe("When the new VM was made."),
  phase: z.enum(Object.values(ClonePhase) as [ClonePhase, ...ClonePhase[]]).optional(),
  conditions: z.array(condition).optional(),
  snapshotName: z.string().nullable().optional().describe("The snapshot the clone took, until it is cleaned up."),
  restoreName: z.string().nullable().optional().describe("The restore that makes the new VM, until cleaned up."),
  targetName: z.string().nullable().optional().describe("The new VM's name."),
});

export const virtualMachineClone = z.object({
  apiVersion: z.literal(CLONE_API_VERSION),
  kind: z.literal(CLONE_KIND),
  metadata: objectMeta,
  spec: virtualMachineCloneSpec,
  status: virtualMachineCloneStatus.optional(),
});

export type VirtualMachineCloneSpec = z.infer<typeof virtualMachineCloneSpec>;
export type VirtualMachineCloneStatus = z.infer<typeof virtualMachineCloneStatus>;
export type VirtualMachineClone = z.infer<typeof virtualMachineClone>;
