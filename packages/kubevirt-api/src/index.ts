export * from "./constants.ts";
export * from "./quantity.ts";
export * from "./schema/common.ts";
export * from "./schema/vmi.ts";
export * from "./schema/vm.ts";
export * from "./schema/migration.ts";
export * from "./schema/migration-policy.ts";
export * from "./schema/instancetype.ts";
export * from "./schema/datavolume.ts";
export * from "./schema/kubevirt.ts";
export * from "./schema/snapshot.ts";
export * from "./schema/clone.ts";
export * from "./snapshot.ts";
export * from "./cluster-config.ts";
export * from "./instancetype/expand.ts";
export * from "./instancetype/find.ts";
export * from "./instancetype/infer.ts";
export * from "./defaults.ts";
export * from "./validation/index.ts";
export {
  dataVolumeCrd,
  instancetypeCrds,
  virtualMachineCrd,
  virtualMachineInstanceCrd,
  virtualMachineInstanceMigrationCrd,
  migrationPolicyCrd,
  kubeVirtCrd,
  snapshotCrds,
  cloneCrd,
} from "./crd/crds.ts";
export * from "./pod-network.ts";
export * from "./probes.ts";
export * from "./resources.ts";
export * from "./owner.ts";
