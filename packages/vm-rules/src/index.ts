export {};
export * from "./memory-overhead.ts";
