export * from "./client/index.ts";
export * from "./controller/index.ts";
export { type EventHandler, Informer, type InformerOptions } from "./informer/informer.ts";
export { type LeaderCallbacks, type LeaderElectionOptions, LeaderElector } from "./leader/leader-election.ts";
export * from "./workqueue/index.ts";
export { EXPECTATIONS_RECHECK_MS, Expectations, type ExpectationsOptions } from "./expectations.ts";
export * from "./client/core.ts";
