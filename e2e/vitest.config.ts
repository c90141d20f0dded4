import { defineConfig } from "vitest/config";
import { reporters } from "@kubevirt-ts/control-plane/failure-list";

/**
 * The suites that change what every other suite stands on, or time themselves against a quiet cluster: each runs
 * alone, after the rest.
 */
const ALONE = [
  // Times the other tenant's cycle against a baseline, and counts the components' restarts.
  "cluster/hostile-tenant.test.ts",
  // Keeps a node's handler from beating until the node is unschedulable.
  "cluster/nodes.test.ts",
  // Turns the KubeVirt CR's useEmulation off: every VMI started meanwhile would wait for KVM.
  "cluster/kvm.test.ts",
  // Changes the KubeVirt CR: the launcher pods' CPU request, the components' log verbosity.
  "cluster/kubevirt-cr.test.ts",
  // helm upgrade to a new launcher image, which migrates or labels every running VMI.
  "cluster/workload-update.test.ts",
  // kubectl drain of a node, which evicts every pod on it.
  "cluster/vm-migration.test.ts",
  // Uninstalls the chart and installs it again.
  "cluster/system.test.ts",
  // Scales virt-controller to nothing.
  "cluster/alerts.test.ts",
];

// The cluster suite: runs against the system `make up` (cluster-up and cluster-sync) leaves on this machine. Its
// time is mostly guests booting under emulation, each on one core: the suites that keep to their own namespace run
// two at a time, the others alone after them, one at a time.
export default defineConfig({
  test: {
    reporters: reporters(),
    testTimeout: 360_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: "beside",
          include: ["cluster/**/*.test.ts"],
          exclude: ALONE,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: "alone", include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
