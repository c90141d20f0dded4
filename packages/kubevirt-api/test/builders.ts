// Builders for test objects: plain data, no logic, no client calls.
import type { VirtualMachine, VirtualMachineInstance, VmiSpec } from "../src/index.ts";

type Mutator<T> = (value: T) => void;

export function newVmiSpec(...mutators: Mutator<VmiSpec>[]): VmiSpec {
  const spec: VmiSpec = {
    domain: {
      resources: { requests: { memory: "128Mi" } },
      devices: {
        disks: [{ name: "containerdisk", disk: { bus: "virtio" } }],
        interfaces: [{ name: "default", masquerade: {} }],
      },
    },
    networks: [{ name: "default", pod: {} }],
    volumes: [{ name: "containerdisk", containerDisk: { image: "quay.io/kubevirt/cirros-container-disk-demo" } }],
  };
  for (const mutate of mutators) mutate(spec);
  return spec;
}

export function newVm(spec: VmiSpec = newVmiSpec(), mutate?: Mutator<VirtualMachine>): VirtualMachine {
  const vm: VirtualMachine = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name: "testvm" },
    spec: { runStrategy: "Always", template: { spec } },
  };
  mutate?.(vm);
  return vm;
}

export function newVmi(spec: VmiSpec = newVmiSpec(), mutate?: Mutator<VirtualMachineInstance>): VirtualMachineInstance {
  const vmi: VirtualMachineInstance = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "testvmi" },
    spec,
  };
  mutate?.(vmi);
  return vmi;
}
