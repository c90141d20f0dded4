// Test objects: plain data, no logic, no client calls.
import type { OwnerReference, Pod } from "@kubevirt-ts/kube";
import type { RunStrategy, VirtualMachine, VirtualMachineInstance, VmiSpec } from "@kubevirt-ts/kubevirt-api";

export function vmiSpec(): VmiSpec {
  return {
    domain: { memory: { guest: "128Mi" }, devices: { disks: [{ name: "root", disk: { bus: "virtio" } }] } },
    volumes: [{ name: "root", containerDisk: { image: "kubevirt-ts.local/guest-tiny:test" } }],
  };
}

export function newVm(name: string, runStrategy: RunStrategy, namespace: string): VirtualMachine {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name, namespace },
    spec: { runStrategy, template: { spec: vmiSpec() } },
  };
}

export function newVmi(name: string, namespace: string, spec: VmiSpec = vmiSpec()): VirtualMachineInstance {
  return { apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", metadata: { name, namespace }, spec };
}

/** The finalizer that holds a decoy until the test lets it go, as an attacker's pod could. */
export const DECOY_FINALIZER = "kubevirt-ts.test/decoy";

/** A pod anyone allowed to create pods could make: the launcher labels and a VMI's uid, held by a finalizer. */
export function decoyPod(name: string, namespace: string, vmiUid: string, ownerReferences?: OwnerReference[]): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      labels: { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmiUid },
      finalizers: [DECOY_FINALIZER],
      ownerReferences,
    },
    spec: { containers: [{ name: "decoy", image: "kubevirt-ts.local/pause:test" }] },
  };
}
