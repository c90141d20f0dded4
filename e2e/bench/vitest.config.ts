import { defineConfig } from "vitest/config";

// The benchmark's pure parts (percentiles, metrics parsing, comparison) as
// unit tests; the benchmark itself runs with `make bench`, never as a test.
export default defineConfig({
  test: { root: import.meta.dirname, include: ["*.test.ts"] },
});
