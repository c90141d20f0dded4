import { defineConfig } from "vitest/config";
import { VitestFailureList } from "./failure-list.ts";

// The chaos suite: kills the cluster's components one at a time, so it runs
// on its own, after every other suite (hack/test.sh).
export default defineConfig({
  test: {
    include: ["chaos/**/*.test.ts"],
    fileParallelism: false,
    reporters: ["default", new VitestFailureList(process.env.KUBEVIRT_TS_FAILURES)],
    sequence: { concurrent: false },
    testTimeout: 360_000,
    hookTimeout: 180_000,
  },
});
