import { reporters } from "@kubevirt-ts/control-plane/failure-list";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { include: ["src/**/*.test.ts", "gateway/**/*.test.ts"], environment: "node", reporters: reporters() },
});
