export { type ConditionLike, findCondition, removeCondition, setCondition } from "./conditions.ts";
export { type EventRecorder, type EventType, createEventRecorder } from "./events.ts";
export { addFinalizer, hasFinalizer, removeFinalizer } from "./finalizers.ts";
export {
  type ControllerMetrics,
  type Reconcile,
  type ReconcileResult,
  type RunControllerOptions,
  TerminalError,
  createControllerMetrics,
  runController,
} from "./runner.ts";
export { normalized, writeStatusIfChanged } from "./status-write.ts";
export { WrittenVersions } from "./written-versions.ts";
export { ControllerManager, type ControllerManagerOptions, type ManagedController } from "./manager.ts";
