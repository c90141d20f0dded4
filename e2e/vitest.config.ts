import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
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
  // Kills the handler of its VM's node: every console and action on that node fails until the new one is ready.
  "cluster/vm-running.test.ts",
];

/**
 * The longest files of the suites that run two at a time, longest first: started first, they end with the rest rather
 * than after it. (Vitest orders a run without recorded durations, as in CI, by file size alone.)
 */
const LONGEST = ["cluster/vm-snapshot.test.ts", "cluster/vm-debian.test.ts"];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const index = LONGEST.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index === -1 ? LONGEST.length : index;
    };
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    return (await super.sort(files)).sort((a, b) => group(a) - group(b) || rank(a) - rank(b));
  }
}

// The cluster suite: runs against the system `make up` (cluster-up and cluster-sync) leaves on this machine. Its
// time is mostly guests booting under emulation, each on one core: the suites that keep to their own namespace run
// two at a time, the others alone after them, one at a time.
export default defineConfig({
  test: {
    reporters: reporters(),
    sequence: { sequencer: LongestFirst },
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
