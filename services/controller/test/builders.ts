// Test objects: plain data, no logic, no client calls.
import type { RunStrategy, VirtualMachine, VirtualMachineInstance, VmiSpec } from "@kubevirt-ts/kubevirt-api";

export function vmiSpec(): VmiSpec {
  return {
    domain: { memory: { guest: "128Mi" }, devices: { disks: [{ name: "root", disk: { bus: "virtio" } }] } },
    volumes: [{ name: "root", containerDisk: { image: "kubevirt-ts.local/guest-tiny:test" } }],
  };
}

export function newVm(name: string, runStrategy: RunStrategy, namespace: string): VirtualMachine {
  return { apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", metadata: { name, namespace }, spec: { runStrategy, template: { spec: vmiSpec() } } };
}

export function newVmi(name: string, namespace: string, spec: VmiSpec = vmiSpec()): VirtualMachineInstance {
  return { apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", metadata: { name, namespace }, spec };
}
