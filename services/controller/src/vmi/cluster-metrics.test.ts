import type { Informer } from "@kubevirt-ts/kube";
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from "@kubevirt-ts/kubevirt-api";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { migrationsInFlight, nonEvictableVmis, registerClusterMetrics, vmiPhaseCounts } from "./cluster-metrics.ts";

interface VmiFacts {
  name: string;
  phase?: string;
  node?: string;
  eviction?: string;
  migratable?: boolean;
  annotations?: Record<string, string>;
  guest?: Record<string, string>;
}
const vmi = (f: VmiFacts) =>
  ({
    metadata: { namespace: "tenant", name: f.name, annotations: f.annotations },
    spec: { evictionStrategy: f.eviction },
    status: {
      phase: f.phase,
      nodeName: f.node,
      guestOSInfo: f.guest,
      conditions:
        f.migratable === undefined
          ? undefined
          : [{ type: "LiveMigratable", status: f.migratable ? "True" : "False", reason: "DisksNotLiveMigratable" }],
    },
  }) as unknown as VirtualMachineInstance;
const migration = (phase?: string) =>
  ({
    metadata: { namespace: "tenant", name: "m" },
    spec: { vmiName: "x" },
    status: phase ? { phase } : undefined,
  }) as unknown as VirtualMachineInstanceMigration;

describe("vmiPhaseCounts", () => {
  it("counts VMIs by KubeVirt's labels, phase in lower case, <none> for what is absent", () => {
    const counts = vmiPhaseCounts([
      vmi({ name: "a", phase: "Running", node: "n1", annotations: { "vm.kubevirt.io/os": "fedora" } }),
      vmi({ name: "b", phase: "Running", node: "n1", annotations: { "vm.kubevirt.io/os": "fedora" } }),
      vmi({ name: "c", phase: "Pending" }),
    ]);
    expect(counts).toHaveLength(2);
    const running = counts.find((c) => c.labels.phase === "running");
    expect(running?.count).toBe(2);
    expect(running?.labels).toMatchObject({ node: "n1", os: "fedora", workload: "<none>", instance_type: "<none>" });
    expect(counts.find((c) => c.labels.phase === "pending")?.labels.node).toBe("<none>");
  });

  it("cuts what a guest agent says to 63 characters", () => {
    const [count] = vmiPhaseCounts([vmi({ name: "a", phase: "Running", guest: { name: "x".repeat(5000) } })]);
    expect(count?.labels.guest_os_name).toBe("x".repeat(63));
  });
});

describe("nonEvictableVmis", () => {
  it("marks running VMIs whose strategy is LiveMigrate, their own or the cluster's, that cannot migrate", () => {
    const vmis = [
      vmi({ name: "pinned", phase: "Running", node: "n1", eviction: "LiveMigrate", migratable: false }),
      vmi({ name: "movable", phase: "Running", node: "n1", eviction: "LiveMigrate", migratable: true }),
      vmi({ name: "stops", phase: "Running", node: "n1", eviction: "None", migratable: false }),
      vmi({ name: "default", phase: "Running", node: "n2", migratable: false }),
      vmi({ name: "pending", phase: "Pending", eviction: "LiveMigrate", migratable: false }),
    ];
    const marked = (clusterDefault: "None" | "LiveMigrate") =>
      nonEvictableVmis(vmis, clusterDefault)
        .filter((v) => v.value === 1)
        .map((v) => `${v.name}@${v.node}`);
    expect(marked("None")).toEqual(["pinned@n1"]);
    expect(marked("LiveMigrate")).toEqual(["pinned@n1", "default@n2"]);
    expect(nonEvictableVmis(vmis, "None").map((v) => v.name)).not.toContain("pending");
  });
});

describe("migrationsInFlight", () => {
  it("counts unfinished migrations as pending, scheduling or running", () => {
    expect(
      migrationsInFlight(
        [undefined, "Pending", "Scheduling", "PreparingTarget", "TargetReady", "Running", "Succeeded", "Failed"].map(
          migration,
        ),
      ),
    ).toEqual({ pending: 2, scheduling: 3, running: 1 });
  });
});

describe("registerClusterMetrics", () => {
  const informer = <T>(items: T[]) => ({ list: () => items }) as unknown as Informer<T & { metadata: object }>;

  it("reports readiness and leadership always, and what the caches hold only while leading", async () => {
    const registry = new Registry();
    let leading = false;
    registerClusterMetrics({
      registry,
      vmis: informer([
        vmi({ name: "pinned", phase: "Running", node: "n1", eviction: "LiveMigrate", migratable: false }),
      ]),
      migrations: informer([migration("Running"), migration("Succeeded")]),
      evictionStrategy: () => "None",
      leading: () => leading,
      ready: () => true,
    });
    const follower = await registry.metrics();
    expect(follower).toContain("kubevirt_virt_controller_leading_status 0");
    expect(follower).toContain("kubevirt_virt_controller_ready_status 1");
    expect(follower).not.toMatch(/^kubevirt_vmi_phase_count\{/m);
    expect(follower).toContain("kubevirt_vmi_migrations_in_running_phase 0");

    leading = true;
    const leader = await registry.metrics();
    expect(leader).toContain("kubevirt_virt_controller_leading_status 1");
    expect(leader).toMatch(/^kubevirt_vmi_phase_count\{node="n1",phase="running",.*\} 1$/m);
    expect(leader).toContain('kubevirt_vmi_non_evictable{namespace="tenant",name="pinned",node="n1"} 1');
    expect(leader).toContain("kubevirt_vmi_migrations_in_running_phase 1");
    expect(leader).toContain('kubevirt_vmi_migration_succeeded{namespace="tenant",vmi="x",vmim="m"} 1');
  });
});
