// VMs the end-to-end suites (the cluster suite and the dashboard's) boot.

/** The tiny guest (a kernel and a busybox initramfs) as a kernel-boot VM on the pod network, masquerade by default. */
export function tinyVm(
  name: string,
  image: string,
  namespace?: string,
  binding: "masquerade" | "bridge" = "masquerade",
) {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: {
      runStrategy: "Always",
      template: {
        spec: {
          domain: {
            memory: { guest: "128Mi" },
            firmware: {
              kernelBoot: {
                kernelArgs: "console=ttyS0",
                container: { image, kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" },
              },
            },
            devices: { interfaces: [{ name: "default", [binding]: {} }] },
          },
          networks: [{ name: "default", pod: {} }],
          terminationGracePeriodSeconds: 5,
        },
      },
    },
  };
}

type TinySpec = ReturnType<typeof tinyVm>["spec"]["template"]["spec"];

/** The tiny guest with its template's spec changed. */
export function tinyVmWithSpec(
  name: string,
  image: string,
  namespace: string | undefined,
  change: (spec: TinySpec) => Record<string, unknown>,
) {
  const vm = tinyVm(name, image, namespace);
  return { ...vm, spec: { ...vm.spec, template: { spec: change(vm.spec.template.spec) } } };
}

/** The tiny guest with one more disk, vda, on the volume source given. */
function tinyVmWithDisk(name: string, image: string, source: Record<string, unknown>, namespace?: string) {
  return tinyVmWithSpec(name, image, namespace, (spec) => ({
    ...spec,
    domain: { ...spec.domain, devices: { ...spec.domain.devices, disks: [{ name: "data", disk: { bus: "virtio" } }] } },
    volumes: [{ name: "data", ...source }],
  }));
}

/** The tiny guest with one more disk, vda, on a PersistentVolumeClaim. */
export function tinyVmOnClaim(name: string, image: string, claimName: string, namespace?: string) {
  return tinyVmWithDisk(name, image, { persistentVolumeClaim: { claimName } }, namespace);
}

/** The tiny guest with one more disk, vda, on the DataVolume of its one dataVolumeTemplate, named <name>-disk. */
export function tinyVmOnDataVolume(
  name: string,
  image: string,
  dataVolumeSpec: Record<string, unknown>,
  namespace?: string,
) {
  const vm = tinyVmWithDisk(name, image, { dataVolume: { name: `${name}-disk` } }, namespace);
  return {
    ...vm,
    spec: { ...vm.spec, dataVolumeTemplates: [{ metadata: { name: `${name}-disk` }, spec: dataVolumeSpec }] },
  };
}
