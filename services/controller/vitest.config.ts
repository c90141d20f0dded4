import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.integration.test.ts"],
    globalSetup: ["@kubevirt-ts/control-plane/vitest-setup"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
