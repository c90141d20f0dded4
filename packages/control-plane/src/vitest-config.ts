// The vitest settings of a package's tests: unit tests colocated as
// src/**/*.test.ts, and integration tests under test/, which are slow.

const integrationTimeouts = { testTimeout: 120_000, hookTimeout: 120_000 };
const unit = { test: { name: "unit", include: ["src/**/*.test.ts"] } };

/** Unit tests, and integration tests against the real control plane of vitest-setup.ts. */
export const unitAndIntegrationProjects = [
  unit,
  {
    test: {
      name: "integration",
      include: ["test/**/*.integration.test.ts"],
      globalSetup: ["@kubevirt-ts/control-plane/vitest-setup"],
      ...integrationTimeouts,
    },
  },
];

/** Unit tests, and integration tests of real host software (libvirt, QEMU) that need no Kubernetes API. */
export const unitAndHostIntegrationProjects = [
  unit,
  { test: { name: "integration", include: ["test/**/*.integration.test.ts"], ...integrationTimeouts } },
];
