import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import type { Pod } from "@kubevirt-ts/kube";
import { launcherPodFor } from "./launcher-pod.ts";

// Which pod the handler of node-a drives for the VMI victim/vm, among the
// real one and decoys that carry the launcher labels and the VMI's uid.

const NODE = "node-a";
const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { namespace: "victim", name: "vm", uid: "vmi-uid" },
  spec: { domain: { devices: {} } },
  status: { phase: "Running", nodeName: NODE, activePods: { "real-uid": NODE } },
};
const labels = { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-uid" };
const controllerRef = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  name: "vm",
  uid: "vmi-uid",
  controller: true,
  blockOwnerDeletion: true,
};

function pod(
  uid: string,
  changes: { namespace?: string; owned?: boolean; node?: string; phase?: string; deleting?: boolean } = {},
): Pod {
  return {
    metadata: {
      namespace: changes.namespace ?? "victim",
      name: `virt-launcher-${uid}`,
      uid,
      labels,
      ownerReferences: changes.owned === false ? undefined : [controllerRef],
      deletionTimestamp: changes.deleting ? "2025-01-01T00:00:00Z" : undefined,
    },
    spec: { nodeName: changes.node ?? NODE, containers: [] },
    status: { phase: changes.phase ?? "Running" },
  };
}

const real = pod("real-uid");

describe("the pod the handler uses for a VMI", () => {
  const cases: [string, Pod[], Pod | undefined][] = [
    ["the controller's pod, named in activePods", [real], real],
    [
      "the real pod, whatever decoys come first",
      [
        pod("decoy-1", { namespace: "attacker", owned: false }),
        pod("decoy-2", { owned: false }),
        pod("decoy-3", { namespace: "attacker" }),
        real,
      ],
      real,
    ],
    [
      "not a decoy in another namespace with the labels only",
      [pod("decoy", { namespace: "attacker", owned: false })],
      undefined,
    ],
    [
      "not a decoy in another namespace with a forged controller reference",
      [pod("decoy", { namespace: "attacker" })],
      undefined,
    ],
    ["not a decoy in the same namespace with the labels only", [pod("decoy", { owned: false })], undefined],
    [
      "not a decoy in another namespace whose uid activePods names",
      [{ ...pod("real-uid", { namespace: "attacker", owned: false }) }],
      undefined,
    ],
    ["not an owned pod that activePods does not name", [pod("second")], undefined],
    ["not the real pod when activePods names it on another node", [pod("real-uid", { node: "node-b" })], undefined],
    ["not the real pod while it is being deleted", [pod("real-uid", { deleting: true })], undefined],
    ["not the real pod before it runs", [pod("real-uid", { phase: "Pending" })], undefined],
  ];
  it.each(cases)("%s", (_, candidates, expected) => {
    expect(launcherPodFor(vmi, candidates, NODE)).toBe(expected);
  });

  it("none while the VMI's status names no active pod", () => {
    expect(launcherPodFor({ ...vmi, status: { ...vmi.status, activePods: undefined } }, [real], NODE)).toBeUndefined();
  });

  it("none for another node's handler", () => {
    expect(launcherPodFor(vmi, [real], "node-b")).toBeUndefined();
  });
});
