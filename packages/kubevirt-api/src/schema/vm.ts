import { z } from "zod";
import { PRINTABLE_STATUSES, RUN_STRATEGIES } from "../constants.ts";
import { condition, objectMeta } from "./common.ts";
import { dataVolumeTemplate } from "./datavolume.ts";
import { instancetypeMatcher, instancetypeStatusRef, preferenceMatcher } from "./instancetype.ts";
import { vmiSpec } from "./vmi.ts";

export const vmiTemplate = z
  .strictObject({
    metadata: z
      .looseObject({
        labels: z.record(z.string(), z.string()).optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      })
      .meta({ "x-kubernetes-preserve-unknown-fields": true })
      .optional()
      .describe("Labels and annotations given to the VMI."),
    spec: vmiSpec,
  })
  .describe("The VirtualMachineInstance this VM creates when it runs.");

export const vmSpec = z
  .strictObject({
    runStrategy: z
      .enum(RUN_STRATEGIES)
      .optional()
      .describe("When the VM runs: Always, RerunOnFailure, Manual, Halted or Once. Never together with running."),
    running: z.boolean().optional().describe("Deprecated: use runStrategy. true means Always, false means Halted."),
    instancetype: instancetypeMatcher
      .optional()
      .describe("The instancetype that sizes the VM (vCPUs, memory); the template must not set what it sets."),
    preference: preferenceMatcher
      .optional()
      .describe(
        "The preference for the guest OS: device buses and models, firmware, CPU layout, " +
          "used where the template leaves them unset.",
      ),
    template: vmiTemplate,
    dataVolumeTemplates: z
      .array(dataVolumeTemplate)
      .optional()
      .describe(
        "DataVolumes the VM creates, owns and deletes with itself; each is named by " +
          "a dataVolume volume of the template.",
      ),
  })
  .describe("The specification of a virtual machine.");

// Start and stop requests, as KubeVirt's virt-api records them (planVmRequest, vm-requests.ts) and the VM controller
// acts on them (services/controller/src/vm/decide.ts).
export const stateChangeRequest = z.object({
  action: z.enum(["Start", "Stop"]),
  data: z.record(z.string(), z.string()).optional(),
  uid: z.string().optional().describe("The UID of the VMI the request applies to."),
});

export const vmStatus = z.object({
  printableStatus: z.enum(PRINTABLE_STATUSES).optional().describe("The VM's status in one word."),
  created: z.boolean().optional().describe("Whether the VMI exists."),
  ready: z.boolean().optional().describe("Whether the VMI is running and ready."),
  runStrategy: z.enum(RUN_STRATEGIES).optional().describe("The run strategy in effect."),
  conditions: z.array(condition).optional(),
  stateChangeRequests: z.array(stateChangeRequest).optional(),
  startFailure: z
    .object({
      consecutiveFailCount: z.number().int().optional(),
      lastFailedVMIUID: z.string().optional(),
      retryAfterTimestamp: z.string().optional(),
    })
    .optional(),
  instancetypeRef: instancetypeStatusRef
    .optional()
    .describe("The instancetype in effect and the ControllerRevision that holds it."),
  preferenceRef: instancetypeStatusRef
    .optional()
    .describe("The preference in effect and the ControllerRevision that holds it."),
  observedGeneration: z.number().int().optional(),
  desiredGeneration: z.number().int().optional(),
  snapshotInProgress: z
    .string()
    .optional()
    .describe("The VirtualMachineSnapshot being taken of the VM: the snapshot controller sets and clears it."),
  restoreInProgress: z
    .string()
    .optional()
    .describe("The VirtualMachineRestore that is rewriting the VM; it is not started until the restore is done."),
});

export const virtualMachine = z.object({
  apiVersion: z.literal("kubevirt.io/v1"),
  kind: z.literal("VirtualMachine"),
  metadata: objectMeta,
  spec: vmSpec,
  status: vmStatus.optional(),
});

export type VmSpec = z.infer<typeof vmSpec>;
export type VmStatus = z.infer<typeof vmStatus>;
export type VirtualMachine = z.infer<typeof virtualMachine>;
export type StateChangeRequest = z.infer<typeof stateChangeRequest>;
