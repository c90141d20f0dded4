import { defineConfig } from "vitest/config";
import { reporters } from "@kubevirt-ts/control-plane/failure-list";

// The cluster suite: runs against the system `make up` (cluster-up and
// cluster-sync) leaves on this machine, one test at a time.
export default defineConfig({
  test: {
    include: ["cluster/**/*.test.ts"],
    fileParallelism: false,
    reporters: reporters(),
    testTimeout: 360_000,
    hookTimeout: 120_000,
  },
});
