import { z } from "zod";
import { DISK_BUSES, INTERFACE_MODELS, INSTANCETYPE_API_VERSION, InstancetypeKind } from "../constants.ts";
import { objectMeta, quantity } from "./common.ts";
import { clock, features } from "./vmi.ts";

// instancetype.kubevirt.io/v1beta1: the sizes (instancetypes) and the guest
// OS's preferred devices (preferences) a VM refers to instead of spelling
// them out, namespaced and cluster-wide. As everywhere here, objects are
// strict: a field KubeVirt has whose effect kubevirt-ts cannot give (dedicated
// CPUs, huge pages, GPUs, ...) is refused by path, never stored and ignored.

const cpuTopologies = [
  "sockets",
  "cores",
  "threads",
  "spread",
  "any",
  "preferSockets",
  "preferCores",
  "preferThreads",
  "preferSpread",
  "preferAny",
] as const;
export type PreferredCpuTopology = (typeof cpuTopologies)[number];

export const instancetypeSpec = z
  .strictObject({
    cpu: z
      .strictObject({
        guest: z
          .number()
          .int()
          .min(1)
          .describe(
            "The number of vCPUs the guest sees, laid out as sockets, cores or threads by " +
              "the preference (sockets unless it says).",
          ),
        model: z.string().optional().describe("The CPU model, e.g. host-model."),
      })
      .describe("The guest's vCPUs."),
    memory: z
      .strictObject({
        guest: quantity.describe("The memory the guest sees."),
        overcommitPercent: z
          .number()
          .int()
          .min(0)
          .max(100)
          .optional()
          .describe("Request this much percent less memory for the launcher pod than the guest sees (0 to 100)."),
      })
      .describe("The guest's memory."),
    nodeSelector: z.record(z.string(), z.string()).optional().describe("Labels a node must have to run the VM."),
    annotations: z
      .record(z.string(), z.string())
      .optional()
      .describe("Annotations given to the VMI, where its template does not set them."),
  })
  .describe("The size of a virtual machine: its vCPUs and memory.");

const bus = z.enum(DISK_BUSES);

export const preferenceSpec = z
  .strictObject({
    cpu: z
      .strictObject({
        preferredCPUTopology: z
          .enum(cpuTopologies)
          .optional()
          .describe(
            "How the instancetype's vCPUs are laid out: sockets, cores, threads, " +
              "spread (over sockets and cores) or any.",
          ),
        spreadOptions: z
          .strictObject({
            across: z.enum(["SocketsCores", "SocketsCoresThreads", "CoresThreads"]).optional(),
            ratio: z
              .number()
              .int()
              .optional()
              .describe("vCPUs of the second level per one of the first; 2 unless set."),
          })
          .optional(),
      })
      .optional(),
    devices: z
      .strictObject({
        preferredDiskBus: bus.optional().describe("The bus of disks that do not name one."),
        preferredCdromBus: bus.optional().describe("The bus of CD-ROMs that do not name one."),
        preferredLunBus: bus.optional().describe("The bus of LUNs that do not name one."),
        preferredDiskCache: z.enum(["none", "writethrough", "writeback"]).optional(),
        preferredInterfaceModel: z
          .enum(INTERFACE_MODELS)
          .optional()
          .describe("The model of interfaces that do not name one."),
        preferredRng: z
          .strictObject({})
          .optional()
          .describe("Give the guest a random number generator unless the template says otherwise."),
        preferredAutoattachSerialConsole: z.boolean().optional(),
        preferredAutoattachGraphicsDevice: z.boolean().optional(),
        preferredAutoattachPodInterface: z.boolean().optional(),
        preferredAutoattachMemBalloon: z.boolean().optional(),
        preferredTPM: z
          .strictObject({
            enabled: z.boolean().optional(),
            persistent: z.boolean().optional().describe("Keep its state on the VM's backend-storage claim."),
          })
          .optional()
          .describe("A TPM, unless the template has one (or turns it off)."),
      })
      .optional(),
    features: z
      .strictObject({
        preferredAcpi: features.shape.acpi,
        preferredApic: features.shape.apic,
        preferredHyperv: features.shape.hyperv,
        preferredKvm: features.shape.kvm,
        preferredPvspinlock: features.shape.pvspinlock,
        preferredSmm: features.shape.smm,
      })
      .optional()
      .describe(
        "Features the guest OS wants (a Windows guest: Hyper-V enlightenments), each where the template sets none.",
      ),
    clock: z
      .strictObject({
        preferredClockOffset: z
          .strictObject({ utc: clock.shape.utc, timezone: clock.shape.timezone })
          .optional()
          .describe("UTC (with an offset) or a time zone, unless the template's clock says."),
        preferredTimer: clock.shape.timer.describe("The timers, unless the template's clock lists its own."),
      })
      .optional(),
    firmware: z
      .strictObject({
        preferredUseBios: z.boolean().optional(),
        preferredEfi: z
          .strictObject({
            secureBoot: z.boolean().optional().describe("Secure boot, with SMM; on unless set, as KubeVirt's EFI."),
            persistent: z.boolean().optional().describe("Keep the EFI variables on the VM's backend-storage claim."),
          })
          .optional()
          .describe("Boot through EFI (OVMF) unless the template chooses BIOS or EFI itself."),
        preferredUseEfi: z.boolean().optional().describe("Deprecated: use preferredEfi."),
        preferredUseSecureBoot: z.boolean().optional().describe("Deprecated: use preferredEfi.secureBoot."),
      })
      .optional(),
    machine: z.strictObject({ preferredMachineType: z.string().optional() }).optional(),
    requirements: z
      .strictObject({
        cpu: z
          .strictObject({ guest: z.number().int() })
          .optional()
          .describe("The fewest vCPUs the guest OS runs with."),
        memory: z.strictObject({ guest: quantity }).optional().describe("The least memory the guest OS runs with."),
      })
      .optional()
      .describe("What the instancetype (or the template) must give at least."),
    preferredTerminationGracePeriodSeconds: z.number().int().optional(),
    preferredArchitecture: z.string().optional(),
    preferredSubdomain: z.string().optional(),
    annotations: z
      .record(z.string(), z.string())
      .optional()
      .describe("Annotations given to the VMI, where neither its template nor the instancetype sets them."),
  })
  .describe("What a guest OS prefers: device buses and models, firmware, CPU layout, and the least it needs.");

const instancetypeObject = <K extends string, S extends z.ZodType>(kind: K, spec: S) =>
  z.object({ apiVersion: z.literal(INSTANCETYPE_API_VERSION), kind: z.literal(kind), metadata: objectMeta, spec });

export const virtualMachineInstancetype = instancetypeObject(InstancetypeKind.Instancetype, instancetypeSpec);
export const virtualMachineClusterInstancetype = instancetypeObject(
  InstancetypeKind.ClusterInstancetype,
  instancetypeSpec,
);
export const virtualMachinePreference = instancetypeObject(InstancetypeKind.Preference, preferenceSpec);
export const virtualMachineClusterPreference = instancetypeObject(InstancetypeKind.ClusterPreference, preferenceSpec);

/** A VM's reference to its instancetype or preference (KubeVirt's InstancetypeMatcher and PreferenceMatcher). */
const matcher = (what: string, defaultKind: string) =>
  z.strictObject({
    name: z.string().describe(`The ${what}'s name.`),
    kind: z
      .string()
      .optional()
      .describe(`${defaultKind} unless set; the namespaced kind is looked up in the VM's namespace.`),
    revisionName: z
      .string()
      .optional()
      .describe(`The ControllerRevision holding the ${what} as the VM first saw it; filled in by the controller.`),
    inferFromVolume: z
      .string()
      .optional()
      .describe(
        `A volume whose claim (or DataVolume) names the ${what} by its ` +
          `instancetype.kubevirt.io/default-${what} label (and -kind); virt-api's webhook sets the name and ` +
          "kind from it and drops this.",
      ),
    inferFromVolumeFailurePolicy: z
      .enum(["Reject", "Ignore"])
      .optional()
      .describe(
        `Reject (the default) refuses a VM whose volume names no ${what}; Ignore drops the ${what} instead ` +
          "(and, for an instancetype, keeps the template's memory only when none is inferred).",
      ),
  });

export const instancetypeMatcher = matcher("instancetype", InstancetypeKind.ClusterInstancetype);
export const preferenceMatcher = matcher("preference", InstancetypeKind.ClusterPreference);

/** Where the VM's status says which instancetype or preference, captured in which ControllerRevision, it runs with. */
export const instancetypeStatusRef = z.object({
  name: z.string().optional(),
  kind: z.string().optional(),
  controllerRevisionRef: z.object({ name: z.string().optional() }).optional(),
});

export type InstancetypeSpec = z.infer<typeof instancetypeSpec>;
export type PreferenceSpec = z.infer<typeof preferenceSpec>;
export type InstancetypeMatcher = z.infer<typeof instancetypeMatcher>;
export type PreferenceMatcher = z.infer<typeof preferenceMatcher>;
export type InstancetypeStatusRef = z.infer<typeof instancetypeStatusRef>;
