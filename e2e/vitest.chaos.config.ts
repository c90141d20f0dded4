import { defineConfig } from "vitest/config";
import { reporters } from "@kubevirt-ts/control-plane/failure-list";

// The chaos suite: kills the cluster's components one at a time, so it runs
// on its own, after every other suite (hack/test.sh).
export default defineConfig({
  test: {
    include: ["chaos/**/*.test.ts"],
    fileParallelism: false,
    reporters: reporters(),
    sequence: { concurrent: false },
    testTimeout: 360_000,
    hookTimeout: 180_000,
  },
});
