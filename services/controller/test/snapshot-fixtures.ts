import { type KubeClient, type PersistentVolumeClaim, resources } from "@kubevirt-ts/kube";
import {
  type DataVolume,
  VOLUME_COPY_KIND_ANNOTATION,
  type VirtualMachine,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  kubevirtResources,
  snapshotContentName,
  volumeCopyName,
} from "@kubevirt-ts/kubevirt-api";
import { expect } from "vitest";
import { type RunningControllers, clientTest, getObject, startControllers } from "./harness.ts";

// What the restore and clone tests stand in for, against a real kube-apiserver with no kubelet and no importer: a VM
// with a DataVolume and a claim, a finished snapshot of it (the snapshot, its content, copy claims that stay Pending)
// as the snapshot controller leaves it, and a restored DataVolume filled as the DataVolume controller fills it.

/** A test with the controllers running in its namespace, but no snapshot controller: the test writes snapshots. */
export const standInSnapshotTest = clientTest.extend<{ ctl: RunningControllers }>({
  ctl: [
    async ({ namespace }, use) => {
      const ctl = await startControllers(namespace, { snapshots: false });
      await use(ctl);
      await ctl.stop();
    },
    { auto: true },
  ],
});

export const poll = { timeout: 20_000, interval: 100 };
export const SNAPSHOT_UID = "5e1f0000-0000-4000-8000-000000000001";
export const MAC = "02:00:00:00:00:01";
export const FIRMWARE_UUID = "6f1a2b3c-4d5e-5f60-8a7b-9c0d1e2f3a4b";

export function vmWithDisks(namespace: string, runStrategy: "Always" | "Halted"): VirtualMachine {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name: "vm", namespace, labels: { app: "db" } },
    spec: {
      runStrategy,
      dataVolumeTemplates: [
        {
          metadata: { name: "vm-root" },
          spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
        },
      ],
      template: {
        spec: {
          domain: {
            memory: { guest: "128Mi" },
            firmware: { uuid: FIRMWARE_UUID },
            devices: {
              disks: [
                { name: "root", disk: { bus: "virtio" } },
                { name: "data", disk: { bus: "virtio" } },
              ],
              interfaces: [{ name: "default", masquerade: {}, macAddress: MAC }],
            },
          },
          networks: [{ name: "default", pod: {} }],
          volumes: [
            { name: "root", dataVolume: { name: "vm-root" } },
            { name: "data", persistentVolumeClaim: { claimName: "data-claim" } },
          ],
        },
      },
    },
  };
}

export const claim = (name: string, namespace: string): PersistentVolumeClaim => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, namespace },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
});

/** What the snapshot controller leaves of a finished snapshot of the VM: the snapshot, its content, the copy claims. */
export async function readySnapshot(
  client: KubeClient,
  namespace: string,
  vm: VirtualMachine,
  copyKind: "PersistentVolumeClaim" | "VolumeSnapshot" = "PersistentVolumeClaim",
): Promise<void> {
  for (const volume of ["root", "data"])
    await client.create(
      resources.persistentVolumeClaims,
      namespace,
      claim(volumeCopyName(SNAPSHOT_UID, volume), namespace),
    );
  const contentName = snapshotContentName(SNAPSHOT_UID);
  const content = await client.create<VirtualMachineSnapshotContent>(
    kubevirtResources.virtualMachineSnapshotContents,
    namespace,
    {
      apiVersion: "snapshot.kubevirt.io/v1beta1",
      kind: "VirtualMachineSnapshotContent",
      metadata: {
        name: contentName,
        namespace,
        annotations: { [VOLUME_COPY_KIND_ANNOTATION]: copyKind },
      },
      spec: {
        virtualMachineSnapshotName: "s1",
        source: {
          virtualMachine: {
            metadata: { name: vm.metadata.name, namespace, uid: vm.metadata.uid, labels: vm.metadata.labels },
            spec: vm.spec,
          },
        },
        volumeBackups: [
          { volumeName: "root", claim: "vm-root" },
          { volumeName: "data", claim: "data-claim" },
        ].map(({ volumeName, claim: name }) => ({
          volumeName,
          persistentVolumeClaim: {
            metadata: { name },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          },
          volumeSnapshotName: volumeCopyName(SNAPSHOT_UID, volumeName),
        })),
      },
    },
  );
  await client.update(
    kubevirtResources.virtualMachineSnapshotContents,
    { ...content, status: { readyToUse: true } },
    "status",
  );
  await succeededSnapshot(client, namespace, "s1", vm, contentName);
}

/** A snapshot of the VM as the snapshot controller leaves it once it succeeded, naming its content. */
export async function succeededSnapshot(
  client: KubeClient,
  namespace: string,
  name: string,
  vm: VirtualMachine,
  contentName: string,
): Promise<void> {
  const snapshot = await client.create<VirtualMachineSnapshot>(kubevirtResources.virtualMachineSnapshots, namespace, {
    apiVersion: "snapshot.kubevirt.io/v1beta1",
    kind: "VirtualMachineSnapshot",
    metadata: { name, namespace },
    spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" } },
  });
  await client.update(
    kubevirtResources.virtualMachineSnapshots,
    {
      ...snapshot,
      status: {
        phase: "Succeeded",
        readyToUse: true,
        sourceUID: vm.metadata.uid,
        virtualMachineSnapshotContentName: contentName,
      },
    },
    "status",
  );
}

/** A stopped VM, and a ready snapshot of it. */
export async function stoppedVmWithSnapshot(
  client: KubeClient,
  namespace: string,
  copyKind?: "PersistentVolumeClaim" | "VolumeSnapshot",
): Promise<VirtualMachine> {
  const vm = await client.create<VirtualMachine>(
    kubevirtResources.virtualMachines,
    namespace,
    vmWithDisks(namespace, "Halted"),
  );
  await readySnapshot(client, namespace, vm, copyKind);
  return vm;
}

export const getDv = (client: KubeClient, namespace: string, name: string) =>
  getObject<DataVolume>(client, kubevirtResources.dataVolumes, namespace, name);

/** Stands in for the DataVolume controller: the restored claim's DataVolume is filled. */
export async function dataVolumeSucceeds(client: KubeClient, namespace: string, name: string): Promise<void> {
  await expect.poll(() => getDv(client, namespace, name), poll).toBeDefined();
  const dv = await getDv(client, namespace, name);
  if (!dv) throw new Error(`no DataVolume ${name}`);
  await client.update(
    kubevirtResources.dataVolumes,
    { ...dv, status: { phase: "Succeeded", progress: "100.0%" } },
    "status",
  );
}
