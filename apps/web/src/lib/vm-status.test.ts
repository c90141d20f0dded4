import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { actionAllowed, age, forAnyOf, inEveryNamespace, migrationAvailability } from "./vm-status";

describe("age", () => {
  it("reads like kubectl's AGE column", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    expect(age("2026-01-01T11:59:30Z", now)).toBe("30s");
    expect(age("2026-01-01T11:00:00Z", now)).toBe("1h");
    expect(age("2025-12-29T12:00:00Z", now)).toBe("3d");
  });
});

describe("actionAllowed", () => {
  const cannot = { available: false, by: "state", reason: "the VM is already running" } as const;
  it("says the missing permission first, then the VM's state as a sentence", () => {
    expect(actionAllowed({ allowed: false, reason: "You may not start VMs in ns." }, cannot)).toEqual({
      allowed: false,
      reason: "You may not start VMs in ns.",
    });
    expect(actionAllowed({ allowed: true }, cannot)).toEqual({ allowed: false, reason: "The VM is already running." });
    expect(actionAllowed({ allowed: true }, { available: true })).toEqual({ allowed: true, reason: undefined });
  });

  it("leaves the button undecided while the permissions or the VM are loading", () => {
    expect(actionAllowed(undefined, { available: true })).toEqual({ allowed: undefined, reason: undefined });
    expect(actionAllowed({ allowed: true }, undefined)).toEqual({ allowed: undefined, reason: undefined });
  });
});

describe("forAnyOf", () => {
  it("allows an action on a selection when any VM of it allows it, and otherwise says why for each", () => {
    const running = { available: false, by: "state", reason: "the VM is already running" } as const;
    expect(
      forAnyOf([
        ["a", running],
        ["b", { available: true }],
      ]),
    ).toEqual({ available: true });
    expect(
      forAnyOf([
        ["a", running],
        ["b", running],
      ]),
    ).toEqual({ available: false, by: "state", reason: "a: the VM is already running; b: the VM is already running" });
    expect(forAnyOf([])).toBeUndefined();
  });
});

describe("inEveryNamespace", () => {
  const refused = {
    allowed: false,
    reason: "You may not stop VMs in b: it takes update on virtualmachines/stop (subresources.kubevirt.io).",
  };
  it("is allowed only when every namespace allows it", () => {
    expect(inEveryNamespace([{ allowed: true }, { allowed: true }])).toEqual({ allowed: true });
    expect(inEveryNamespace([{ allowed: true }, refused])).toBe(refused);
  });
  it("is unknown while a namespace's answer is out, or when no VM is chosen", () => {
    expect(inEveryNamespace([{ allowed: true }, undefined])).toBeUndefined();
    expect(inEveryNamespace([])).toBeUndefined();
    expect(inEveryNamespace([undefined, refused])).toBe(refused);
  });
});

describe("migrationAvailability", () => {
  const vmi = (phase: string, migratable?: "True" | "False"): VirtualMachineInstance => ({
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "web" },
    spec: { domain: { devices: {} } },
    status: {
      phase: phase as NonNullable<VirtualMachineInstance["status"]>["phase"],
      ...(migratable
        ? {
            conditions: [
              { type: "LiveMigratable", status: migratable, reason: "DisksNotLiveMigratable", message: "m" },
            ],
          }
        : {}),
    },
  });

  it("is available for a running, live-migratable VMI, and says why not otherwise", () => {
    expect(migrationAvailability(vmi("Running", "True"))).toEqual({ available: true });
    expect(migrationAvailability(undefined)).toEqual({
      available: false,
      by: "state",
      reason: "the VM is not running",
    });
    expect(migrationAvailability(vmi("Running", "False"))).toMatchObject({
      available: false,
      reason: "VMI web is not live migratable: DisksNotLiveMigratable: m",
    });
    expect(migrationAvailability(vmi("Scheduling"))).toMatchObject({
      available: false,
      reason: expect.stringContaining("only a running VMI can be migrated") as unknown,
    });
  });
});
