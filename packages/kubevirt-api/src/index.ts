export * from "./constants.ts";
export * from "./quantity.ts";
export * from "./schema/common.ts";
export * from "./schema/vmi.ts";
export * from "./schema/vm.ts";
export * from "./defaults.ts";
export * from "./validation/index.ts";
export { virtualMachineCrd, virtualMachineInstanceCrd } from "./crd/crds.ts";
export * from "./lifecycle.ts";
