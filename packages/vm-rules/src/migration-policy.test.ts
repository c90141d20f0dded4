import { describe, expect, it } from "vitest";
import {
  bandwidthMiB,
  matchMigrationPolicy,
  migrationConfigurationFor,
  switchesToPostCopy,
} from "./migration-policy.ts";
import { type MigrationPolicy, type MigrationPolicySpec, validateMigrationPolicy } from "@kubevirt-ts/kubevirt-api";

const policy = (
  name: string,
  spec: Partial<MigrationPolicySpec> & Pick<MigrationPolicySpec, "selectors">,
): MigrationPolicy => ({
  apiVersion: "migrations.kubevirt.io/v1alpha1",
  kind: "MigrationPolicy",
  metadata: { name },
  spec,
});
const names = (p: MigrationPolicy | undefined) => p?.metadata.name;

describe("matchMigrationPolicy, KubeVirt's choice of a VMI's policy", () => {
  const vmi = { app: "db", tier: "gold" };
  const ns = { team: "payments" };

  it("applies a policy only when the VMI and its namespace have every label of its selectors", () => {
    expect(
      names(
        matchMigrationPolicy([policy("a", { selectors: { virtualMachineInstanceSelector: { app: "db" } } })], vmi, ns),
      ),
    ).toBe("a");
    expect(
      names(
        matchMigrationPolicy(
          [policy("a", { selectors: { virtualMachineInstanceSelector: { app: "db", zone: "x" } } })],
          vmi,
          ns,
        ),
      ),
    ).toBeUndefined();
    expect(
      names(
        matchMigrationPolicy([policy("a", { selectors: { virtualMachineInstanceSelector: { app: "web" } } })], vmi, ns),
      ),
    ).toBeUndefined();
    expect(
      names(
        matchMigrationPolicy(
          [
            policy("a", {
              selectors: { virtualMachineInstanceSelector: { app: "db" }, namespaceSelector: { team: "web" } },
            }),
          ],
          vmi,
          ns,
        ),
      ),
    ).toBeUndefined();
    expect(
      names(
        matchMigrationPolicy([policy("a", { selectors: { namespaceSelector: { team: "payments" } } })], vmi, undefined),
      ),
    ).toBeUndefined();
  });

  it("takes empty selectors to match every VMI, with the least weight", () => {
    const all = policy("all", { selectors: {} });
    expect(names(matchMigrationPolicy([all], undefined, undefined))).toBe("all");
    expect(names(matchMigrationPolicy([all, policy("zz-ns", { selectors: { namespaceSelector: ns } })], vmi, ns))).toBe(
      "zz-ns",
    );
  });

  it("prefers the most matching labels of both, then the most of the VMI's, then the first name", () => {
    const both = policy("z-both", {
      selectors: { virtualMachineInstanceSelector: { app: "db" }, namespaceSelector: ns },
    });
    const twoVmi = policy("zz-two", { selectors: { virtualMachineInstanceSelector: vmi } });
    const oneVmi = policy("a-one", { selectors: { virtualMachineInstanceSelector: { tier: "gold" } } });
    // Two labels each: the one with more of the VMI's, though its name comes last.
    expect(names(matchMigrationPolicy([both, twoVmi, oneVmi], vmi, ns))).toBe("zz-two");
    expect(names(matchMigrationPolicy([both, oneVmi], vmi, ns))).toBe("z-both");
    const twin = policy("b-twin", { selectors: { virtualMachineInstanceSelector: { app: "db" } } });
    expect(
      names(
        matchMigrationPolicy(
          [twin, policy("a-twin", { selectors: { virtualMachineInstanceSelector: { tier: "gold" } } })],
          vmi,
          ns,
        ),
      ),
    ).toBe("a-twin");
  });
});

describe("migrationConfigurationFor", () => {
  const cluster = {
    parallelMigrationsPerCluster: 5,
    parallelOutboundMigrationsPerNode: 2,
    allowAutoConverge: false,
    allowPostCopy: false,
    bandwidthPerMigration: "0Mi",
    completionTimeoutPerGiB: 150,
  };

  it("is the cluster's, unnamed, without a policy or with one that sets nothing", () => {
    expect(migrationConfigurationFor(cluster, undefined)).toEqual({ migrationConfiguration: cluster });
    expect(migrationConfigurationFor(cluster, policy("empty", { selectors: {} }))).toEqual({
      migrationConfiguration: cluster,
    });
  });

  it("has the policy's fields over the cluster's, and the policy's name", () => {
    const p = policy("fast", {
      selectors: {},
      allowAutoConverge: true,
      bandwidthPerMigration: "64Mi",
      completionTimeoutPerGiB: 0,
    });
    expect(migrationConfigurationFor(cluster, p)).toEqual({
      migrationConfiguration: {
        ...cluster,
        allowAutoConverge: true,
        bandwidthPerMigration: "64Mi",
        completionTimeoutPerGiB: 0,
      },
      migrationPolicyName: "fast",
    });
  });
});

describe("what a configuration means to the migration", () => {
  it.each([
    [undefined, 0],
    ["0Mi", 0],
    [0, 0],
    ["512Ki", 1],
    ["64Mi", 64],
    ["2000Mi", 2000],
    ["1G", 954],
    [3 * 2 ** 20, 3],
  ])("bandwidth %s is %d MiB/s", (q, mib) => {
    expect(bandwidthMiB(q)).toBe(mib);
  });

  it("switches to post-copy when post-copy is allowed, unless workload disruption is refused", () => {
    expect(switchesToPostCopy({})).toBe(false);
    expect(switchesToPostCopy({ allowPostCopy: true })).toBe(true);
    expect(switchesToPostCopy({ allowPostCopy: true, allowWorkloadDisruption: false })).toBe(false);
    expect(switchesToPostCopy({ allowPostCopy: false, allowWorkloadDisruption: true })).toBe(false);
  });
});

describe("validateMigrationPolicy", () => {
  const refusal = (spec: unknown) => {
    const result = validateMigrationPolicy({
      apiVersion: "migrations.kubevirt.io/v1alpha1",
      kind: "MigrationPolicy",
      metadata: { name: "p" },
      spec,
    });
    return result.ok ? undefined : result.causes[0];
  };

  it("accepts KubeVirt's example policy", () => {
    expect(
      refusal({
        allowAutoConverge: false,
        allowPostCopy: false,
        bandwidthPerMigration: "2000Mi",
        completionTimeoutPerGiB: 123456789,
        selectors: {
          namespaceSelector: { "namespace-key": "namespace-value" },
          virtualMachineInstanceSelector: { "vmi-key": "vmi-value" },
        },
      }),
    ).toBeUndefined();
  });

  it.each([
    ["a policy without selectors", {}, "spec.selectors"],
    ["a field kubevirt-ts does not act on", { selectors: {}, maxDowntimeMs: 300 }, "spec.maxDowntimeMs"],
    ["a negative bandwidth", { selectors: {}, bandwidthPerMigration: "-1Mi" }, "spec.bandwidthPerMigration"],
    ["a negative completion time", { selectors: {}, completionTimeoutPerGiB: -1 }, "spec.completionTimeoutPerGiB"],
    [
      "workload disruption without post-copy: a paused guest",
      { selectors: {}, allowWorkloadDisruption: true },
      "spec.allowWorkloadDisruption",
    ],
  ])("refuses %s, naming the field", (_, spec, field) => {
    expect(refusal(spec)?.field).toBe(field);
  });
});
