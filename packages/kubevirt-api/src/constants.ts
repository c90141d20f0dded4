// Names shared by every component. Values match KubeVirt's so that manifests,
// label selectors and tooling written for KubeVirt keep working.

export const GROUP = "kubevirt.io";
export const VERSION = "v1";
export const API_VERSION = `${GROUP}/${VERSION}`;
/**
 * The kubevirt.io version KubeVirt still serves for older clients: the same schema as v1, never stored, deprecated
 * with KubeVirt's warning; its webhooks admit both.
 */
export const DEPRECATED_VERSION = {
  name: "v1alpha3",
  warning: "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release.",
} as const;
export const DEPRECATED_API_VERSION = `${GROUP}/${DEPRECATED_VERSION.name}`;
export const SUBRESOURCE_GROUP = "subresources.kubevirt.io";

export const Kind = {
  VirtualMachine: "VirtualMachine",
  VirtualMachineInstance: "VirtualMachineInstance",
  VirtualMachineInstanceMigration: "VirtualMachineInstanceMigration",
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

export const Resource = {
  VirtualMachine: { plural: "virtualmachines", singular: "virtualmachine", shortNames: ["vm", "vms"] },
  VirtualMachineInstance: {
    plural: "virtualmachineinstances",
    singular: "virtualmachineinstance",
    shortNames: ["vmi", "vmis"],
  },
  VirtualMachineInstanceMigration: {
    plural: "virtualmachineinstancemigrations",
    singular: "virtualmachineinstancemigration",
    shortNames: ["vmim", "vmims"],
  },
} as const;

/** KubeVirt's installation CR (kubevirt.io/v1 KubeVirt): the cluster's live configuration, one per cluster. */
export const KUBEVIRT_KIND = "KubeVirt";
export const KubeVirtResource = { plural: "kubevirts", singular: "kubevirt", shortNames: ["kv", "kvs"] } as const;

/** Migration policies: KubeVirt's group for the migration settings of the VMIs a policy selects. */
export const MIGRATIONS_GROUP = "migrations.kubevirt.io";
export const MIGRATIONS_VERSION = "v1alpha1";
export const MIGRATION_POLICY_KIND = "MigrationPolicy";
export const MigrationPolicyResource = {
  plural: "migrationpolicies",
  singular: "migrationpolicy",
  shortNames: [],
} as const;

/** Instancetypes and preferences: KubeVirt's group for a VM's size and its guest OS's preferred devices. */
export const INSTANCETYPE_GROUP = "instancetype.kubevirt.io";
export const INSTANCETYPE_VERSION = "v1beta1";
export const INSTANCETYPE_API_VERSION = `${INSTANCETYPE_GROUP}/${INSTANCETYPE_VERSION}`;

export const InstancetypeKind = {
  Instancetype: "VirtualMachineInstancetype",
  ClusterInstancetype: "VirtualMachineClusterInstancetype",
  Preference: "VirtualMachinePreference",
  ClusterPreference: "VirtualMachineClusterPreference",
} as const;
export type InstancetypeKind = (typeof InstancetypeKind)[keyof typeof InstancetypeKind];

export const InstancetypeResource = {
  VirtualMachineInstancetype: {
    plural: "virtualmachineinstancetypes",
    singular: "virtualmachineinstancetype",
    shortNames: ["vminstancetype", "vminstancetypes", "vmf", "vmfs"],
    namespaced: true,
  },
  VirtualMachineClusterInstancetype: {
    plural: "virtualmachineclusterinstancetypes",
    singular: "virtualmachineclusterinstancetype",
    shortNames: ["vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"],
    namespaced: false,
  },
  VirtualMachinePreference: {
    plural: "virtualmachinepreferences",
    singular: "virtualmachinepreference",
    shortNames: ["vmpref", "vmprefs", "vmp", "vmps"],
    namespaced: true,
  },
  VirtualMachineClusterPreference: {
    plural: "virtualmachineclusterpreferences",
    singular: "virtualmachineclusterpreference",
    shortNames: ["vmcpref", "vmcprefs", "vmcp", "vmcps"],
    namespaced: false,
  },
} as const;

export const RunStrategy = {
  Always: "Always",
  RerunOnFailure: "RerunOnFailure",
  Manual: "Manual",
  Halted: "Halted",
  Once: "Once",
} as const;
export type RunStrategy = (typeof RunStrategy)[keyof typeof RunStrategy];
export const RUN_STRATEGIES = Object.values(RunStrategy);

/** KubeVirt's eviction strategies: what an eviction of a VMI's launcher pod does (eviction.ts). */
export const EVICTION_STRATEGIES = ["None", "LiveMigrate", "LiveMigrateIfPossible", "External"] as const;
export type EvictionStrategy = (typeof EVICTION_STRATEGIES)[number];

export const VmiPhase = {
  Pending: "Pending",
  Scheduling: "Scheduling",
  Scheduled: "Scheduled",
  Running: "Running",
  Succeeded: "Succeeded",
  Failed: "Failed",
  Unknown: "Unknown",
} as const;
export type VmiPhase = (typeof VmiPhase)[keyof typeof VmiPhase];
export const VMI_PHASES = Object.values(VmiPhase);

/** KubeVirt's default of a VMI's spec.terminationGracePeriodSeconds: the seconds its guest has to shut down. */
export const DEFAULT_GRACE_PERIOD_SECONDS = 30;

/** KubeVirt's phases of a VirtualMachineInstanceMigration, in their order (migration.ts says who moves each). */
export const MigrationPhase = {
  Pending: "Pending",
  Scheduling: "Scheduling",
  Scheduled: "Scheduled",
  PreparingTarget: "PreparingTarget",
  TargetReady: "TargetReady",
  Running: "Running",
  Succeeded: "Succeeded",
  Failed: "Failed",
} as const;
export type MigrationPhase = (typeof MigrationPhase)[keyof typeof MigrationPhase];
export const MIGRATION_PHASES = Object.values(MigrationPhase);

export const PrintableStatus = {
  Stopped: "Stopped",
  Provisioning: "Provisioning",
  Starting: "Starting",
  Running: "Running",
  Paused: "Paused",
  Stopping: "Stopping",
  Terminating: "Terminating",
  CrashLoopBackOff: "CrashLoopBackOff",
  Migrating: "Migrating",
  Unknown: "Unknown",
  ErrorUnschedulable: "ErrorUnschedulable",
  ErrImagePull: "ErrImagePull",
  ImagePullBackOff: "ImagePullBackOff",
  ErrorPvcNotFound: "ErrorPvcNotFound",
  WaitingForVolumeBinding: "WaitingForVolumeBinding",
  DataVolumeError: "DataVolumeError",
} as const;
export type PrintableStatus = (typeof PrintableStatus)[keyof typeof PrintableStatus];
export const PRINTABLE_STATUSES = Object.values(PrintableStatus);

export const VmConditionType = {
  Ready: "Ready",
  Failure: "Failure",
  Paused: "Paused",
  RestartRequired: "RestartRequired",
} as const;
export type VmConditionType = (typeof VmConditionType)[keyof typeof VmConditionType];

export const VmiConditionType = {
  Ready: "Ready",
  Paused: "Paused",
  Synchronized: "Synchronized",
  SoftwareEmulation: "SoftwareEmulation",
  /** The guest's QEMU agent answers (KubeVirt's name). */
  AgentConnected: "AgentConnected",
  /** Whether the access credentials given through the guest agent are in the guest (KubeVirt's). */
  AccessCredentialsSynchronized: "AccessCredentialsSynchronized",
  /** Set by the controller from the launcher pod's PodScheduled=False condition. */
  PodScheduled: "PodScheduled",
  /** Whether the DataVolumes the VMI's volumes name have filled their claims (KubeVirt's). */
  DataVolumesReady: "DataVolumesReady",
  /** Whether the VMI can be live migrated, and if not, why (KubeVirt's; migration.ts). */
  LiveMigratable: "LiveMigratable",
} as const;
export type VmiConditionType = (typeof VmiConditionType)[keyof typeof VmiConditionType];

export const ConditionStatus = { True: "True", False: "False", Unknown: "Unknown" } as const;
export type ConditionStatus = (typeof ConditionStatus)[keyof typeof ConditionStatus];

export const StateChangeAction = { Start: "Start", Stop: "Stop" } as const;
export type StateChangeAction = (typeof StateChangeAction)[keyof typeof StateChangeAction];

export const DiskBus = { virtio: "virtio", sata: "sata", scsi: "scsi", usb: "usb" } as const;
export type DiskBus = (typeof DiskBus)[keyof typeof DiskBus];
export const DISK_BUSES = Object.values(DiskBus);

export const InterfaceModel = { virtio: "virtio", e1000: "e1000", e1000e: "e1000e", rtl8139: "rtl8139" } as const;
export const INTERFACE_MODELS = Object.values(InterfaceModel);

export const Label = {
  /** Marks every pod and object that belongs to kubevirt-ts, e.g. `kubevirt.io=virt-launcher`. */
  App: "kubevirt.io",
  /** The VM a launcher pod or VMI belongs to. */
  VmName: "vm.kubevirt.io/name",
  /** The UID of the VMI a launcher pod was created for, or of the VM a start revision keeps the spec of. */
  CreatedBy: "kubevirt.io/created-by",
  /**
   * On a launcher pod: its VMI's name, cut to a label value with a hash when longer (KubeVirt's); what `virtctl
   * expose` Services select.
   */
  VmiId: "vmi.kubevirt.io/id",
  /** The node a VMI runs on. */
  NodeName: "kubevirt.io/nodeName",
  /** On a migration's target launcher pod: the uid of its VirtualMachineInstanceMigration (KubeVirt's). */
  MigrationJobUid: "kubevirt.io/migrationJobUID",
  /** On a migration: the name of the VMI it moves, which `virtctl migrate-cancel` selects (KubeVirt's). */
  MigrationVmiName: "kubevirt.io/vmi-name",
  /** On a migration's PodDisruptionBudget: the name of the migration it protects both pods for (KubeVirt's). */
  MigrationName: "kubevirt.io/migrationName",
  /** On a VMI that is moving: the node its migration's target pod runs on (KubeVirt's). */
  MigrationTargetNodeName: "kubevirt.io/migrationTargetNodeName",
  /** On a VMI whose launcher pod runs another image than the installed launcher's (KubeVirt's). */
  OutdatedLauncherImage: "kubevirt.io/outdatedLauncherImage",
} as const;

/**
 * The label on what kubevirt-ts installs or makes for itself (its CRDs, its images, CDI's config), as the chart's
 * _helpers.tpl puts it on the objects it installs.
 */
export const PART_OF_LABELS = { "app.kubernetes.io/part-of": "kubevirt-ts" } as const;

export const LabelValue = {
  Launcher: "virt-launcher",
  Handler: "virt-handler",
  Controller: "virt-controller",
  Api: "virt-api",
  Importer: "importer",
} as const;

export const Annotation = {
  /** The domain name libvirt uses for a VMI, `<namespace>_<name>`. */
  Domain: "kubevirt.io/domain",
  /** On a migration the evacuation of a node made: the node (KubeVirt's). */
  EvacuationMigration: "kubevirt.io/evacuationMigration",
  /** On a migration the workload updater made to move a VMI onto the installed launcher (KubeVirt's). */
  WorkloadUpdateMigration: "kubevirt.io/workloadUpdateMigration",
  /** On a VM's VMI: the VM's generation it was started from (KubeVirt's). */
  VmGeneration: "kubevirt.io/vm-generation",
} as const;

export const Finalizer = {
  /** Held by the controller on a VMI until its launcher pod is gone. */
  VmiController: "kubevirt.io/virtualMachineControllerFinalize",
  /** Held on a VM until its VMI is gone. */
  VmController: "kubevirt.io/virtualMachineControllerFinalize",
  /**
   * Held by the controller on a VirtualMachineInstanceMigration until its VMI no longer moves by it (a deleted one
   * aborts first).
   */
  Migration: "kubevirt.io/migrationJobFinalize",
} as const;

export const EventReason = {
  SuccessfulCreate: "SuccessfulCreate",
  FailedCreate: "FailedCreate",
  SuccessfulDelete: "SuccessfulDelete",
  FailedDelete: "FailedDelete",
  SuccessfulUpdate: "SuccessfulUpdate",
  FailedUpdate: "FailedUpdate",
  /** KubeVirt's SyncEvents, which its handler records on a VMI (the handler's sync-events.ts says when). */
  Created: "Created",
  Started: "Started",
  ShuttingDown: "ShuttingDown",
  Stopped: "Stopped",
  Deleted: "Deleted",
  PreparingTarget: "PreparingTarget",
  Migrating: "Migrating",
  SyncFailed: "SyncFailed",
  Resumed: "Resumed",
  AccessCredentialsSyncFailed: "AccessCredentialsSyncFailed",
  AccessCredentialsSyncSuccess: "AccessCredentialsSyncSuccess",
  /** The handler's domain actions, as KubeVirt's handler records them. */
  Paused: "Paused",
  Unpaused: "Unpaused",
  Reset: "Reset",
  SoftRebooted: "SoftRebooted",
  FailedUnschedulable: "FailedUnschedulable",
  InvalidSpec: "InvalidSpec",
  /** On a pod that carries the launcher labels but that no VMI controls: it is ignored. */
  UnownedLauncherPod: "UnownedLauncherPod",
  /** A VM made, or could not make, a DataVolume of its dataVolumeTemplates (KubeVirt's). */
  SuccessfulDataVolumeCreate: "SuccessfulDataVolumeCreate",
  FailedDataVolumeCreate: "FailedDataVolumeCreate",
  /** A migration's ends and its target pod's timeouts (KubeVirt's). */
  Migrated: "Migrated",
  MigrationFailed: "MigrationFailed",
  MigrationTargetPodUnschedulable: "migrationTargetPodUnschedulable",
  MigrationBackoff: "MigrationBackoff",
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/**
 * The user and group the launcher, libvirt and QEMU run as in the launcher
 * pod: 107, KubeVirt's qemu user. containerDisk files must be readable by it.
 */
export const LAUNCHER_UID = 107;

/** Names KubeVirt gives the default pod network and its interface. */
export const DEFAULT_NETWORK_NAME = "default";

/**
 * How long the project's HTTP servers (virt-api's ports, the dashboard's gateway) keep an idle kept-alive connection:
 * longer than their clients keep one (Go's HTTP client, the kube-apiserver's calls to webhooks and the aggregated API,
 * 90 s; browsers 60 s and more), so the client always closes it first. A server that closes first (Node's default is
 * 5 s) races the client's next request on that connection, which then fails ("connection reset by peer", "socket hang
 * up").
 */
export const SERVER_KEEP_ALIVE_MS = 120_000;

/**
 * The most procedures one tRPC request may name (a batch): the dashboard's client splits its batches at it, and
 * virt-api refuses a longer one with 400 before any procedure runs. The dashboard's largest page asks a handful at
 * once; a bulk action on a page of VMs is split into requests of this many.
 */
export const TRPC_MAX_BATCH = 16;

export type ConsoleKind = "console" | "vnc";
/** A websocket of raw bytes to a VMI: its serial console, its display, or a port of the guest (portforward). */
export type StreamKind = ConsoleKind | "portforward";

/**
 * The protocols of KubeVirt's portforward/<port>/<protocol>; tcp is what a
 * path without a protocol means. Only tcp is carried here (ADR 6).
 */
export const PORT_FORWARD_PROTOCOLS = ["tcp"] as const;
export type PortForwardProtocol = (typeof PORT_FORWARD_PROTOCOLS)[number];
/** A tunnel to one port of a VMI's guest. */
export interface PortForward {
  port: number;
  protocol: PortForwardProtocol;
}
/** The handler's path segment of a port forward. */
export type PortForwardSegment = `portforward/${number}/${PortForwardProtocol}`;
export const portForwardSegment = (forward: PortForward): PortForwardSegment =>
  `portforward/${forward.port}/${forward.protocol}`;

/**
 * The port forward a path's `<port>[/<protocol>]` asks for, or why it cannot be had, in words that name the part at
 * fault.
 */
export function parsePortForward(port: string, protocol: string | undefined): PortForward | string {
  if (!/^[0-9]{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return `port ${port} is not a port number: give one from 1 to 65535`;
  const wanted = (protocol ?? "tcp").toLowerCase();
  if (wanted === "udp") return "protocol udp is not forwarded yet: only tcp is";
  if (wanted !== "tcp") return `protocol ${protocol ?? ""} is not known: give tcp (or udp, which is not forwarded yet)`;
  return { port: Number(port), protocol: "tcp" };
}
/**
 * The actions the handler carries out on a VMI's domain (PUT), each by its
 * name (the API's, the dashboard's and the launcher's method) and KubeVirt's
 * name of its subresource (the path). The one place the two spellings meet.
 */
export const DOMAIN_ACTION_SUBRESOURCE = {
  pause: "pause",
  unpause: "unpause",
  softReboot: "softreboot",
  reset: "reset",
} as const;
export type VmiDomainAction = keyof typeof DOMAIN_ACTION_SUBRESOURCE;
export const VMI_DOMAIN_ACTIONS = Object.keys(DOMAIN_ACTION_SUBRESOURCE) as VmiDomainAction[];

/** The domain action whose subresource this is, if any. */
export function domainActionOf(subresource: string): VmiDomainAction | undefined {
  return VMI_DOMAIN_ACTIONS.find((action) => DOMAIN_ACTION_SUBRESOURCE[action] === subresource);
}

/**
 * What the guest's QEMU agent tells of it, each a GET of KubeVirt's subresource of that name, answered from one query
 * of the agent.
 */
export const GUEST_AGENT_QUERIES = ["guestosinfo", "userlist", "filesystemlist"] as const;
export type GuestAgentQuery = (typeof GUEST_AGENT_QUERIES)[number];
export const isGuestAgentQuery = (subresource: string): subresource is GuestAgentQuery =>
  (GUEST_AGENT_QUERIES as readonly string[]).includes(subresource);

/**
 * Freezing and thawing the guest's file systems through its agent (PUT), each by KubeVirt's name of its subresource.
 */
export const FREEZE_ACTIONS = ["freeze", "unfreeze"] as const;
export type FreezeAction = (typeof FREEZE_ACTIONS)[number];
export const isFreezeAction = (subresource: string): subresource is FreezeAction =>
  (FREEZE_ACTIONS as readonly string[]).includes(subresource);
