import { defineConfig } from "vitest/config";
import { VitestFailureList } from "./failure-list.ts";

// The cluster suite: runs against the system `make up` (cluster-up and
// cluster-sync) leaves on this machine, one test at a time.
export default defineConfig({
  test: {
    include: ["cluster/**/*.test.ts"],
    fileParallelism: false,
    reporters: ["default", new VitestFailureList(process.env.KUBEVIRT_TS_FAILURES)],
    testTimeout: 360_000,
    hookTimeout: 120_000,
  },
});
