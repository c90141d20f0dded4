import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { defaultPullPolicy, launcherPod } from "./pod.ts";

const config = { launcherImage: "kubevirt-ts.local/virt-launcher:abc", imagePullPolicy: "IfNotPresent" as const, opsPort: 9102, allowEmulation: true };

function vmi(mutate: (v: VirtualMachineInstance) => void = () => undefined): VirtualMachineInstance {
  const value: VirtualMachineInstance = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "testvm", namespace: "ns", uid: "vmi-uid", labels: { "vm.kubevirt.io/name": "testvm", app: "web" } },
    spec: { domain: { memory: { guest: "1Gi" }, cpu: { sockets: 1, cores: 2, threads: 1 }, devices: {} } },
  };
  mutate(value);
  return value;
}

describe("launcherPod", () => {
  const pod = launcherPod(vmi(), config);
  const spec = pod.spec as unknown as Record<string, unknown> & { containers: Record<string, unknown>[]; securityContext: Record<string, unknown> };
  const compute = spec.containers[0] ?? {};

  it("is named after the VMI and owned by it", () => {
    expect(pod.metadata.generateName).toBe("virt-launcher-testvm-");
    expect(pod.metadata.ownerReferences).toEqual([{ apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", name: "testvm", uid: "vmi-uid", controller: true, blockOwnerDeletion: true }]);
  });

  it("carries KubeVirt's labels and the VMI's own", () => {
    expect(pod.metadata.labels).toEqual({ app: "web", "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-uid", "vm.kubevirt.io/name": "testvm" });
  });

  it("asks for the guest's memory plus the overhead", () => {
    // 1 GiB guest + 180 MiB base + ~10.24 MiB (1%) + 2 vCPUs × 8 MiB + 16 MiB video = 1246.24 MiB, rounded up
    expect((compute.resources as { requests: { memory: string } }).requests.memory).toBe("1247Mi");
  });

  it.each([
    ["memory limit", vmi((v) => (v.spec.domain.resources = { limits: { memory: "1Gi" } })), { memory: "1247Mi" }],
    ["cpu limit", vmi((v) => (v.spec.domain.resources = { limits: { cpu: "2" } })), { cpu: "2" }],
  ])("passes a %s on", (_name, given, limits) => {
    const container = (launcherPod(given, config).spec as unknown as { containers: { resources: { limits?: unknown } }[] }).containers[0];
    expect(container?.resources.limits).toEqual(limits);
  });

  it("runs as the unprivileged qemu user", () => {
    expect(spec.securityContext).toMatchObject({ runAsUser: 107, runAsGroup: 107, runAsNonRoot: true });
    expect(compute.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } });
  });

  it("passes scheduling constraints through", () => {
    const given = vmi((v) => {
      v.spec.nodeSelector = { "kubernetes.io/hostname": "node-1" };
      v.spec.tolerations = [{ key: "dedicated", operator: "Equal", value: "vms", effect: "NoSchedule" }];
      v.spec.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {} } };
    });
    expect(launcherPod(given, config).spec).toMatchObject({
      nodeSelector: { "kubernetes.io/hostname": "node-1" },
      tolerations: [{ key: "dedicated", operator: "Equal", value: "vms", effect: "NoSchedule" }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {} } },
    });
  });

  it("gives the guest its grace period and the launcher some more", () => {
    expect(launcherPod(vmi((v) => (v.spec.terminationGracePeriodSeconds = 60)), config).spec?.terminationGracePeriodSeconds).toBe(75);
    expect(spec.terminationGracePeriodSeconds).toBe(45);
  });

  it("tells the launcher whether emulation is allowed and how long the guest has to shut down", () => {
    expect(compute.env).toEqual(expect.arrayContaining([{ name: "ALLOW_EMULATION", value: "true" }, { name: "GRACE_PERIOD_SECONDS", value: "30" }]));
  });

  it("mounts the sockets folder the handler reaches", () => {
    expect(compute.volumeMounts).toEqual([
      { name: "sockets", mountPath: "/var/run/kubevirt-ts/sockets" },
      { name: "launcher-state", mountPath: "/var/run/kubevirt-ts/launcher" },
    ]);
  });
});

describe("containerDisks", () => {
  const withDisks = vmi((v) => {
    v.spec.volumes = [
      { name: "root", containerDisk: { image: "kubevirt-ts.local/guest:1" } },
      { name: "data", containerDisk: { image: "registry.example/disk", path: "/disk/data.qcow2" } },
      { name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config" } },
    ];
  });
  const spec = launcherPod(withDisks, config).spec as unknown as { initContainers: Record<string, unknown>[]; containers: { volumeMounts: unknown[] }[] };

  it("are copied by init containers running each image, with the launcher's static copier", () => {
    expect(spec.initContainers.map((c) => [c.name, c.image, c.command])).toEqual([
      ["container-disk-binary", "kubevirt-ts.local/virt-launcher:abc", ["cp", "/usr/local/bin/kubevirt-ts-disk-copy", "/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy"]],
      ["volume-root", "kubevirt-ts.local/guest:1", ["/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy", "/disk", "/var/run/kubevirt-ts/container-disks/root"]],
      ["volume-data", "registry.example/disk", ["/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy", "/disk/data.qcow2", "/var/run/kubevirt-ts/container-disks/data"]],
    ]);
  });

  it("are read-only to the launcher", () => {
    expect(spec.containers[0]?.volumeMounts).toContainEqual({ name: "container-disks", mountPath: "/var/run/kubevirt-ts/container-disks", readOnly: true });
  });

  it("copies a kernel boot's kernel and initrd out of their image the same way", () => {
    const kernelBoot = launcherPod(
      vmi((v) => (v.spec.domain.firmware = { kernelBoot: { container: { image: "kubevirt-ts.local/tiny-guest:1", kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" } } })),
      config,
    ).spec as unknown as { initContainers: { name: string; command: string[] }[] };
    expect(kernelBoot.initContainers.map((c) => [c.name, c.command.slice(1)])).toEqual([
      ["container-disk-binary", ["/usr/local/bin/kubevirt-ts-disk-copy", "/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy"]],
      ["kernel-boot-0", ["/boot/vmlinuz", "/var/run/kubevirt-ts/kernel-boot"]],
      ["kernel-boot-1", ["/boot/initrd.gz", "/var/run/kubevirt-ts/kernel-boot"]],
    ]);
  });

  it.each([
    ["kubevirt-ts.local/guest:1", "IfNotPresent"],
    ["quay.io/containerdisks/fedora:latest", "Always"],
    ["quay.io/containerdisks/fedora", "Always"],
    ["registry:5000/disk", "Always"],
    ["registry:5000/disk:v2", "IfNotPresent"],
    ["quay.io/disk@sha256:abcd", "IfNotPresent"],
  ])("pull %s with %s unless the volume says otherwise", (image, policy) => {
    expect(defaultPullPolicy(image)).toBe(policy);
  });
});
