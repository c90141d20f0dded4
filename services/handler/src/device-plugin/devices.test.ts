import { describe, expect, it } from "vitest";
import { deviceResourceName } from "@kubevirt-ts/node-contract";
import {
  AllocationRefused,
  NODE_DEVICES,
  type NodeDevice,
  allocate,
  deviceUnits,
  preferredAllocation,
  socketName,
} from "./devices.ts";

const [kvm, , vhost] = NODE_DEVICES as [NodeDevice, NodeDevice, NodeDevice];

describe("the node devices", () => {
  it("are KubeVirt's three, by resource name, socket and path", () => {
    expect(NODE_DEVICES.map((d) => [deviceResourceName(d), socketName(d), d.path])).toEqual([
      ["devices.kubevirt.io/kvm", "kubevirt-kvm.sock", "/dev/kvm"],
      ["devices.kubevirt.io/tun", "kubevirt-tun.sock", "/dev/net/tun"],
      ["devices.kubevirt.io/vhost-net", "kubevirt-vhost-net.sock", "/dev/vhost-net"],
    ]);
  });

  it.each([
    [true, "Healthy"],
    [false, "Unhealthy"],
  ])("are advertised as units, all healthy only while the node has the device (present: %s)", (present, health) => {
    const units = deviceUnits(kvm, present, 3);
    expect(units).toEqual([
      { ID: "kvm0", health },
      { ID: "kvm1", health },
      { ID: "kvm2", health },
    ]);
  });

  it("has 1000 units by default, as KubeVirt's --max-devices", () => {
    expect(deviceUnits(kvm, true)).toHaveLength(1000);
  });
});

describe("allocate", () => {
  it("gives each container the device node read-write at the node's path", () => {
    const answer = allocate(kvm, { container_requests: [{ devices_ids: ["kvm7"] }, { devices_ids: ["kvm3"] }] }, 10);
    expect(answer.container_responses).toHaveLength(2);
    for (const c of answer.container_responses)
      expect(c.devices).toEqual([{ container_path: "/dev/kvm", host_path: "/dev/kvm", permissions: "rw" }]);
  });

  it.each([
    [
      "a unit of another device",
      ["tun0"],
      /container_requests\[0\]\.devices_ids: "tun0" is not a unit of devices\.kubevirt\.io\/kvm \(kvm0 to kvm9\)/,
    ],
    ["a unit past the count", ["kvm10"], /"kvm10" is not a unit/],
    ["a name that only starts like one", ["kvm1x"], /"kvm1x" is not a unit/],
  ])("refuses %s", (_name, ids, message) => {
    expect(() => allocate(kvm, { container_requests: [{ devices_ids: ids }] }, 10)).toThrow(message);
  });

  it("refuses no containers and too many, naming the field", () => {
    expect(() => allocate(kvm, { container_requests: [] })).toThrow(/container_requests: empty/);
    expect(() =>
      allocate(kvm, { container_requests: Array.from({ length: 65 }, () => ({ devices_ids: ["kvm0"] })) }),
    ).toThrow(AllocationRefused);
  });

  it("bounds a refused ID in its message", () => {
    expect(() => allocate(vhost, { container_requests: [{ devices_ids: ["x".repeat(10_000)] }] })).toThrow(
      /^container_requests\[0\]\.devices_ids: "x{64}" is not a unit of devices\.kubevirt\.io\/vhost-net/,
    );
  });
});

describe("preferredAllocation", () => {
  it("keeps the units the kubelet must include and fills up from the available ones", () => {
    const answer = preferredAllocation(
      kvm,
      {
        container_requests: [
          { available_deviceIDs: ["kvm1", "kvm2", "kvm3"], must_include_deviceIDs: ["kvm5"], allocation_size: 2 },
        ],
      },
      10,
    );
    expect(answer).toEqual({ container_responses: [{ deviceIDs: ["kvm5", "kvm1"] }] });
  });
});
