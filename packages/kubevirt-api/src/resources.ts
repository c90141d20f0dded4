import { CDI_GROUP, CDI_VERSION } from "./schema/datavolume.ts";
import { EXPORT_GROUP, EXPORT_VERSION, ExportResource } from "./schema/export.ts";
import { SNAPSHOT_GROUP, SNAPSHOT_VERSION, SnapshotResource } from "./schema/snapshot.ts";
import { CLONE_GROUP, CLONE_VERSION, CloneResource } from "./schema/clone.ts";
import {
  GROUP,
  INSTANCETYPE_GROUP,
  KubeVirtResource,
  MIGRATIONS_GROUP,
  MIGRATIONS_VERSION,
  MigrationPolicyResource,
  INSTANCETYPE_VERSION,
  type InstancetypeKind,
  InstancetypeResource,
  Resource,
  VERSION,
} from "./constants.ts";

// Where the kubevirt.io kinds live in the API, in the shape of
// @kubevirt-ts/kube's ResourceType (group, version, plural, namespaced), for
// its client and informers: the generic runtime knows nothing of VMs, and
// core kinds (pods, events, leases, ...) stay in its `resources`.

export const kubevirtResources = {
  virtualMachines: {
    group: GROUP,
    version: VERSION,
    plural: Resource.VirtualMachine.plural,
    namespaced: true,
    statusSubresource: true,
  },
  // As KubeVirt's: a VMI has no status subresource. Its controllers write status and the kubevirt.io/nodeName label
  // in one update, and the chart's admission policy keeps everyone else from changing either (docs/adr/0008).
  virtualMachineInstances: {
    group: GROUP,
    version: VERSION,
    plural: Resource.VirtualMachineInstance.plural,
    namespaced: true,
    statusSubresource: false,
  },
  virtualMachineInstanceMigrations: {
    group: GROUP,
    version: VERSION,
    plural: Resource.VirtualMachineInstanceMigration.plural,
    namespaced: true,
    statusSubresource: true,
  },
  // Cluster-scoped, as KubeVirt's: an administrator's settings for the migrations of the VMIs a policy selects.
  migrationPolicies: {
    group: MIGRATIONS_GROUP,
    version: MIGRATIONS_VERSION,
    plural: MigrationPolicyResource.plural,
    namespaced: false,
    statusSubresource: true,
  },
  // The installation's configuration, in the release namespace: its status written by virt-controller.
  kubeVirts: {
    group: GROUP,
    version: VERSION,
    plural: KubeVirtResource.plural,
    namespaced: true,
    statusSubresource: true,
  },
  // CDI's, served by CDI where it is installed and by kubevirt-ts where it is not (docs/storage.md).
  dataVolumes: {
    group: CDI_GROUP,
    version: CDI_VERSION,
    plural: "datavolumes",
    namespaced: true,
    statusSubresource: true,
  },
  // CDI's cluster-wide configuration, kept by kubevirt-ts where it serves DataVolumes: the upload proxy's address.
  cdiConfigs: {
    group: CDI_GROUP,
    version: CDI_VERSION,
    plural: "cdiconfigs",
    namespaced: false,
    statusSubresource: true,
  },
  // snapshot.kubevirt.io: snapshots, what they took, and restores (docs/adr/0027).
  virtualMachineSnapshots: {
    group: SNAPSHOT_GROUP,
    version: SNAPSHOT_VERSION,
    plural: SnapshotResource.VirtualMachineSnapshot.plural,
    namespaced: true,
    statusSubresource: true,
  },
  virtualMachineSnapshotContents: {
    group: SNAPSHOT_GROUP,
    version: SNAPSHOT_VERSION,
    plural: SnapshotResource.VirtualMachineSnapshotContent.plural,
    namespaced: true,
    statusSubresource: true,
  },
  virtualMachineRestores: {
    group: SNAPSHOT_GROUP,
    version: SNAPSHOT_VERSION,
    plural: SnapshotResource.VirtualMachineRestore.plural,
    namespaced: true,
    statusSubresource: true,
  },
  // clone.kubevirt.io: a new VM from a VM or a snapshot, through a snapshot and a restore (docs/adr/0028).
  virtualMachineClones: {
    group: CLONE_GROUP,
    version: CLONE_VERSION,
    plural: CloneResource.plural,
    namespaced: true,
    statusSubresource: true,
  },
  // export.kubevirt.io: a VM's, a snapshot's or a claim's disks served for download (docs/data-protection.md).
  virtualMachineExports: {
    group: EXPORT_GROUP,
    version: EXPORT_VERSION,
    plural: ExportResource.plural,
    namespaced: true,
    statusSubresource: true,
  },
} as const;

/** Where instancetype.kubevirt.io's kinds live, by kind; ControllerRevisions keep a VM's copy of the one it uses. */
export const instancetypeResources = Object.fromEntries(
  Object.entries(InstancetypeResource).map(([kind, r]) => [
    kind,
    { group: INSTANCETYPE_GROUP, version: INSTANCETYPE_VERSION, plural: r.plural, namespaced: r.namespaced },
  ]),
) as Record<InstancetypeKind, { group: string; version: string; plural: string; namespaced: boolean }>;

export const controllerRevisions = {
  group: "apps",
  version: "v1",
  plural: "controllerrevisions",
  namespaced: true,
} as const;
