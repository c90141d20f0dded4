// The vitest settings of an integration test project: tests under test/
// against the real control plane of vitest-setup.ts.
export const integrationTestConfig = {
  include: ["test/**/*.integration.test.ts"],
  globalSetup: ["@kubevirt-ts/control-plane/vitest-setup"],
  testTimeout: 120_000,
  hookTimeout: 120_000,
};

/** A package's unit tests (colocated *.test.ts) and integration tests, as two vitest projects. */
export const unitAndIntegrationProjects = [
  { test: { name: "unit", include: ["src/**/*.test.ts"] } },
  { test: { name: "integration", ...integrationTestConfig } },
];
