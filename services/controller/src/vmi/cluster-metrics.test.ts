import type { Informer } from "@kubevirt-ts/kube";
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from "@kubevirt-ts/kubevirt-api";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { isNonEvictable, migrationStatistics, registerClusterMetrics, vmiStatistics } from "./cluster-metrics.ts";

interface VmiFacts {
  name: string;
  phase?: string;
  node?: string;
  eviction?: string;
  /** The LiveMigratable condition's status; no condition when absent. */
  migratable?: "True" | "False" | "Unknown";
  machineType?: string;
  annotations?: Record<string, string>;
  guest?: Record<string, string>;
}
const vmi = (f: VmiFacts) =>
  ({
    metadata: { namespace: "tenant", name: f.name, annotations: f.annotations },
    spec: {
      evictionStrategy: f.eviction,
      domain: { devices: {}, ...(f.machineType ? { machine: { type: f.machineType } } : {}) },
    },
    status: {
      phase: f.phase,
      nodeName: f.node,
      guestOSInfo: f.guest,
      conditions:
        f.migratable === undefined
          ? undefined
          : [{ type: "LiveMigratable", status: f.migratable, reason: "DisksNotLiveMigratable" }],
    },
  }) as unknown as VirtualMachineInstance;
const migration = (phase?: string, name = "m") =>
  ({
    metadata: { namespace: "tenant", name },
    spec: { vmiName: "x" },
    status: phase ? { phase } : undefined,
  }) as unknown as VirtualMachineInstanceMigration;

describe("vmiStatistics: phase counts", () => {
  it("counts VMIs by KubeVirt's labels, phase in lower case, empty for what is absent", () => {
    const { phaseCounts } = vmiStatistics(
      [
        vmi({ name: "a", phase: "Running", node: "n1", annotations: { "vm.kubevirt.io/os": "fedora" } }),
        vmi({ name: "b", phase: "Running", node: "n1", annotations: { "vm.kubevirt.io/os": "fedora" } }),
        vmi({ name: "c", phase: "Pending" }),
      ],
      "None",
    );
    expect(phaseCounts).toHaveLength(2);
    const running = phaseCounts.find((c) => c.labels.phase === "running");
    expect(running?.count).toBe(2);
    expect(running?.labels).toMatchObject({ node: "n1", os: "fedora", workload: "", instance_type: "" });
    expect(phaseCounts.find((c) => c.labels.phase === "pending")).toMatchObject({ count: 1, labels: { node: "" } });
  });

  it("takes the machine type from the spec and the architecture from the guest agent", () => {
    const [count] = vmiStatistics(
      [
        vmi({
          name: "a",
          phase: "Running",
          machineType: "q35",
          guest: { machine: "x86_64", name: "Fedora Linux", versionId: "40", kernelRelease: "6.8.5" },
          annotations: { "kubevirt.io/cluster-instancetype-name": "u1.small", "kubevirt.io/preference-name": "rhel" },
        }),
      ],
      "None",
    ).phaseCounts;
    expect(count?.labels).toMatchObject({
      guest_os_machine: "q35",
      guest_os_arch: "x86_64",
      guest_os_name: "Fedora Linux",
      guest_os_version_id: "40",
      guest_os_kernel_release: "6.8.5",
      instance_type: "u1.small",
      preference: "rhel",
    });
  });

  it("cuts what a guest agent says to 63 characters", () => {
    const [count] = vmiStatistics(
      [vmi({ name: "a", phase: "Running", guest: { name: "x".repeat(5000) } })],
      "None",
    ).phaseCounts;
    expect(count?.labels.guest_os_name).toBe("x".repeat(63));
  });
});

describe("isNonEvictable", () => {
  it("holds for strategy LiveMigrate (the VMI's, else the cluster's) unless LiveMigratable is True or Unknown", () => {
    const cases: [VmiFacts, "None" | "LiveMigrate", boolean][] = [
      [{ name: "a", eviction: "LiveMigrate", migratable: "False" }, "None", true],
      [{ name: "a", eviction: "LiveMigrate" }, "None", true],
      [{ name: "a", eviction: "LiveMigrate", migratable: "True" }, "None", false],
      [{ name: "a", eviction: "LiveMigrate", migratable: "Unknown" }, "None", false],
      [{ name: "a", eviction: "None", migratable: "False" }, "LiveMigrate", false],
      [{ name: "a", eviction: "LiveMigrateIfPossible", migratable: "False" }, "LiveMigrate", false],
      [{ name: "a", migratable: "False" }, "LiveMigrate", true],
      [{ name: "a", migratable: "False" }, "None", false],
    ];
    for (const [facts, clusterDefault, expected] of cases) {
      expect([facts, clusterDefault, isNonEvictable(vmi(facts), clusterDefault)]).toEqual([
        facts,
        clusterDefault,
        expected,
      ]);
    }
  });
});

describe("vmiStatistics: non-evictable", () => {
  it("reports running VMIs only, 1 for those a drain cannot move", () => {
    const { nonEvictable } = vmiStatistics(
      [
        vmi({ name: "pinned", phase: "Running", node: "n1", eviction: "LiveMigrate", migratable: "False" }),
        vmi({ name: "movable", phase: "Running", node: "n1", eviction: "LiveMigrate", migratable: "True" }),
        vmi({ name: "pending", phase: "Pending", eviction: "LiveMigrate", migratable: "False" }),
      ],
      "None",
    );
    expect(nonEvictable).toEqual([
      { labels: { node: "n1", namespace: "tenant", name: "pinned" }, value: 1 },
      { labels: { node: "n1", namespace: "tenant", name: "movable" }, value: 0 },
    ]);
  });
});

describe("vmiStatistics: outdated", () => {
  it("counts the running VMIs labelled kubevirt.io/outdatedLauncherImage", () => {
    const labelled = (v: ReturnType<typeof vmi>) => ({
      ...v,
      metadata: { ...v.metadata, labels: { "kubevirt.io/outdatedLauncherImage": "" } },
    });
    const { outdated } = vmiStatistics(
      [
        labelled(vmi({ name: "old", phase: "Running", node: "n1" })),
        labelled(vmi({ name: "ending", phase: "Succeeded", node: "n1" })),
        vmi({ name: "new", phase: "Running", node: "n1" }),
      ],
      "None",
    );
    expect(outdated).toBe(1);
  });
});

describe("migrationStatistics", () => {
  it("groups phases as KubeVirt does, and lists the ended migrations", () => {
    const stats = migrationStatistics([
      migration(undefined, "u"),
      migration("Pending", "p"),
      migration("Scheduling", "s"),
      migration("Scheduled", "r1"),
      migration("PreparingTarget", "r2"),
      migration("TargetReady", "r3"),
      migration("Running", "r4"),
      migration("Succeeded", "ok"),
      migration("Failed", "ko"),
    ]);
    expect(stats).toEqual({
      unset: 1,
      pending: 1,
      scheduling: 1,
      running: 4,
      succeeded: [{ vmi: "x", vmim: "ok", namespace: "tenant" }],
      failed: [{ vmi: "x", vmim: "ko", namespace: "tenant" }],
    });
  });
});

describe("registerClusterMetrics", () => {
  const informer = <T>(items: T[]) => {
    const counter = { lists: 0 };
    return {
      counter,
      informer: {
        list: () => {
          counter.lists += 1;
          return items;
        },
      } as unknown as Informer<T & { metadata: object }>,
    };
  };

  it("reports readiness and leadership always, and what the caches hold only while leading", async () => {
    const registry = new Registry();
    let leading = false;
    const vmis = informer([
      vmi({ name: "pinned", phase: "Running", node: "n1", eviction: "LiveMigrate", migratable: "False" }),
    ]);
    const migrations = informer([migration("Running"), migration("Succeeded", "ok"), migration("Failed", "ko")]);
    registerClusterMetrics({
      registry,
      vmis: vmis.informer,
      migrations: migrations.informer,
      evictionStrategy: () => "None",
      leading: () => leading,
      ready: () => true,
    });
    const follower = await registry.metrics();
    expect(follower).toContain("kubevirt_virt_controller_leading_status 0");
    expect(follower).toContain("kubevirt_virt_controller_ready_status 1");
    expect(follower).not.toMatch(/^kubevirt_vmi_phase_count\{/m);
    expect(follower).not.toMatch(/^kubevirt_vmi_non_evictable\{/m);
    expect(follower).not.toMatch(/^kubevirt_vmi_migration_succeeded\{/m);
    expect(follower).toContain("kubevirt_vmi_migrations_in_running_phase 0");
    expect(vmis.counter.lists + migrations.counter.lists).toBe(0);

    leading = true;
    const leader = await registry.metrics();
    expect(leader).toContain("kubevirt_virt_controller_leading_status 1");
    expect(leader).toMatch(/^kubevirt_vmi_phase_count\{node="n1",phase="running",.*\} 1$/m);
    expect(leader).toContain('kubevirt_vmi_non_evictable{node="n1",namespace="tenant",name="pinned"} 1');
    expect(leader).toContain("kubevirt_vmi_migrations_in_running_phase 1");
    expect(leader).toContain("kubevirt_vmi_migrations_in_unset_phase 0");
    expect(leader).toContain('kubevirt_vmi_migration_succeeded{vmi="x",vmim="ok",namespace="tenant"} 1');
    expect(leader).toContain('kubevirt_vmi_migration_failed{vmi="x",vmim="ko",namespace="tenant"} 1');
    // One pass over each cache per scrape, however many series read it.
    expect([vmis.counter.lists, migrations.counter.lists]).toEqual([1, 1]);
  });
});
