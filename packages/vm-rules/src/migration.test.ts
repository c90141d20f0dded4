import { describe, expect, it } from "vitest";
import type { ClaimObject } from "./claims.ts";
import {
  handedOffPhase,
  launcherPodRoles,
  liveMigratability,
  migrationRefusal,
  withMigrationPhase,
} from "./migration.ts";
import type { VirtualMachineInstance, VmiSpec } from "@kubevirt-ts/kubevirt-api";

const claim = (name: string, ...accessModes: string[]): [string, ClaimObject] => [
  name,
  { metadata: { name }, spec: { accessModes } },
];
const spec = (volumes: VmiSpec["volumes"], extra: Partial<VmiSpec> = {}): VmiSpec => ({
  domain: { devices: {} },
  volumes,
  ...extra,
});

describe("liveMigratability, KubeVirt's LiveMigratable condition", () => {
  it.each([
    [
      "a ReadWriteMany claim",
      spec([{ name: "root", persistentVolumeClaim: { claimName: "rwx" } }]),
      "True",
      undefined,
      "LiveMigration",
    ],
    [
      "a DataVolume on a ReadWriteMany claim",
      spec([{ name: "root", dataVolume: { name: "rwx" } }]),
      "True",
      undefined,
      "LiveMigration",
    ],
    [
      "a ReadWriteOnce claim",
      spec([{ name: "root", persistentVolumeClaim: { claimName: "rwo" } }]),
      "False",
      "DisksNotLiveMigratable",
      "LiveMigration",
    ],
    [
      "a claim not found",
      spec([{ name: "root", persistentVolumeClaim: { claimName: "absent" } }]),
      "False",
      "DisksNotLiveMigratable",
      "LiveMigration",
    ],
    [
      "an ephemeral volume over a ReadOnlyMany claim",
      spec([{ name: "root", ephemeral: { persistentVolumeClaim: { claimName: "rox" } } }]),
      "True",
      undefined,
      "BlockMigration",
    ],
    [
      "a containerDisk, copied along",
      spec([{ name: "root", containerDisk: { image: "quay.io/containerdisks/fedora" } }]),
      "True",
      undefined,
      "BlockMigration",
    ],
    [
      "persistent EFI variables on the RWO backend-storage claim",
      spec([], { domain: { devices: {}, firmware: { bootloader: { efi: { persistent: true } } } } }),
      "False",
      "DisksNotLiveMigratable",
      "LiveMigration",
    ],
    [
      "a bridge on the pod network",
      spec([], {
        networks: [{ name: "default", pod: {} }],
        domain: { devices: { interfaces: [{ name: "default", bridge: {} }] } },
      }),
      "False",
      "InterfaceNotLiveMigratable",
      "LiveMigration",
    ],
  ] as const)("%s: %s %s", (_, given, status, reason, method) => {
    const claims = new Map([
      claim("rwx", "ReadWriteMany"),
      claim("rwo", "ReadWriteOnce"),
      claim("rox", "ReadOnlyMany"),
    ]);
    const result = liveMigratability(given, claims, "persistent-state-for-web");
    expect(result).toMatchObject({ status, method, ...(reason ? { reason } : {}) });
    if (reason === "DisksNotLiveMigratable")
      expect(result.message).toMatch(/^cannot migrate VMI: PVC (rwo|absent|persistent-state-for-web) /);
  });
});

const running = (
  extra: Partial<NonNullable<VirtualMachineInstance["status"]>> = {},
): Pick<VirtualMachineInstance, "metadata" | "status"> => ({
  metadata: { name: "web" },
  status: { phase: "Running", conditions: [{ type: "LiveMigratable", status: "True" }], ...extra },
});

describe("migrationRefusal", () => {
  it("lets a running, migratable VMI that is not moving go", () => {
    expect(migrationRefusal(running())).toBeUndefined();
    expect(
      migrationRefusal(
        running({ nodeName: "b", migrationState: { migrationUid: "old", targetNode: "b", completed: true } }),
      ),
    ).toBeUndefined();
  });
  it.each([
    ["not running", running({ phase: "Scheduled" }), /is not running/],
    [
      "not migratable",
      running({
        conditions: [{ type: "LiveMigratable", status: "False", reason: "DisksNotLiveMigratable", message: "PVC rwo" }],
      }),
      /not live migratable: DisksNotLiveMigratable: PVC rwo/,
    ],
    [
      "already migrating",
      running({ migrationState: { migrationUid: "m1", targetNode: "b" } }),
      /already migrating \(migration uid m1\)/,
    ],
    [
      "whose migration completed before it is on the target's node",
      running({ nodeName: "a", migrationState: { migrationUid: "m1", targetNode: "b", completed: true } }),
      /already migrating/,
    ],
  ])("refuses a VMI %s", (_, vmi, message) => {
    expect(migrationRefusal(vmi)).toMatch(message);
  });
});

describe("handedOffPhase: the handlers' fields as the migration's phase", () => {
  it.each([
    [{}, undefined],
    [{ migrationUid: "m", targetNode: "b" }, "PreparingTarget"],
    [{ migrationUid: "m", targetNode: "b", targetNodeAddress: "10.0.0.2" }, "TargetReady"],
    [{ migrationUid: "m", targetNode: "b", targetNodeAddress: "10.0.0.2", mode: "PreCopy" as const }, "Running"],
    [{ migrationUid: "m", targetNode: "b", mode: "PreCopy" as const, completed: true }, "Succeeded"],
    [{ migrationUid: "m", targetNode: "b", failed: true, failureReason: "Migration aborted" }, "Failed"],
  ])("%j → %s", (state, phase) => {
    expect(handedOffPhase(state)).toBe(phase);
  });
});

describe("withMigrationPhase", () => {
  it("records each new phase once, with its time", () => {
    const pending = withMigrationPhase({}, "Pending", "t0");
    expect(withMigrationPhase(pending, "Pending", "t1")).toBe(pending);
    expect(withMigrationPhase(pending, "Scheduling", "t1").phaseTransitionTimestamps).toEqual([
      { phase: "Pending", phaseTransitionTimestamp: "t0" },
      { phase: "Scheduling", phaseTransitionTimestamp: "t1" },
    ]);
  });
});

describe("launcherPodRoles", () => {
  const pod = (name: string, uid: string, job?: string) => ({
    metadata: { name, uid, ...(job ? { labels: { "kubevirt.io/migrationJobUID": job } } : {}) },
  });
  const source = pod("source", "u1");
  const target = pod("target", "u2", "m1");

  it("keeps a migration's target pod apart from the VMI's own while it moves", () => {
    expect(
      launcherPodRoles(
        { status: { activePods: { u1: "a" }, migrationState: { migrationUid: "m1", targetPod: "target" } } },
        [source, target],
      ),
    ).toEqual({ current: [source], targets: [target], left: [] });
  });
  it("makes the target current and leaves the source once the migration completed", () => {
    expect(
      launcherPodRoles(
        {
          status: {
            activePods: { u1: "a" },
            migrationState: { migrationUid: "m1", targetPod: "target", completed: true },
          },
        },
        [source, target],
      ),
    ).toEqual({ current: [target], targets: [], left: [source] });
  });
  it("counts a former target as the VMI's own pod, and the source of the next migration", () => {
    const next = pod("next", "u3", "m2");
    expect(
      launcherPodRoles(
        { status: { activePods: { u2: "b" }, migrationState: { migrationUid: "m2", targetPod: "next" } } },
        [target, next],
      ),
    ).toEqual({ current: [target], targets: [next], left: [] });
    expect(
      launcherPodRoles(
        {
          status: {
            activePods: { u2: "b" },
            migrationState: { migrationUid: "m2", targetPod: "next", completed: true },
          },
        },
        [target, next],
      ),
    ).toEqual({ current: [next], targets: [], left: [target] });
  });
});
