import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { compareRows, matchesSearch, vmSize } from "./vm-size";

const vm = (domain: object, extra: object = {}) =>
  ({
    metadata: { name: "web", labels: { app: "shop", tier: "front" } },
    spec: { template: { spec: { domain } }, ...extra },
  }) as unknown as VirtualMachine;

describe("vmSize", () => {
  it("multiplies out the topology and reads the guest memory", () => {
    expect(vmSize(vm({ cpu: { sockets: 2, cores: 2 }, memory: { guest: "1Gi" } }), undefined)).toEqual({
      cpu: "4",
      memory: "1Gi",
      cpuCount: 4,
      memoryBytes: 1024 ** 3,
    });
  });

  it("takes the running instance's size, where the instancetype is applied, and the instancetype's name before", () => {
    const sized = vm({}, { instancetype: { name: "u1.small" } });
    expect(vmSize(sized, undefined)).toMatchObject({ cpu: "u1.small", cpuCount: -1 });
    const vmi = {
      spec: { domain: { cpu: { sockets: 1 }, memory: { guest: "2Gi" } } },
    } as unknown as VirtualMachineInstance;
    expect(vmSize(sized, vmi)).toMatchObject({ cpu: "1", memory: "2Gi" });
  });
});

describe("compareRows", () => {
  const row = (name: string, memory: number, created: string) => ({
    name,
    namespace: "ns",
    status: "Running",
    node: "n",
    size: { cpu: "1", memory: "", cpuCount: 1, memoryBytes: memory },
    created,
  });
  it("sorts by the column, then by name", () => {
    const rows = [row("b", 2, "2026-01-02"), row("a", 2, "2026-01-01"), row("c", 1, "2026-01-03")];
    expect([...rows].sort((x, y) => compareRows("memory", x, y)).map((r) => r.name)).toEqual(["c", "a", "b"]);
    expect([...rows].sort((x, y) => compareRows("age", x, y)).map((r) => r.name)).toEqual(["c", "b", "a"]);
  });
});

describe("matchesSearch", () => {
  it("matches words of the name and labels by key=value, key or value", () => {
    const theVm = vm({});
    expect(matchesSearch(theVm, "we")).toBe(true);
    expect(matchesSearch(theVm, "app=shop")).toBe(true);
    expect(matchesSearch(theVm, "app=shopping")).toBe(false);
    expect(matchesSearch(theVm, "tier front")).toBe(true);
    expect(matchesSearch(theVm, "back")).toBe(false);
  });
});
