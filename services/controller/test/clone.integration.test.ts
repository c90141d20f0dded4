import type { KubeClient } from "@kubevirt-ts/kube";
import {
  type VirtualMachine,
  type VirtualMachineClone,
  type VirtualMachineRestore,
  type VirtualMachineSnapshot,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect } from "vitest";
import { getObject, getVm } from "./harness.ts";
import { dataVolumeSucceeds, poll, stoppedVmWithSnapshot, standInSnapshotTest } from "./snapshot-fixtures.ts";

// The clone controller against a real kube-apiserver, with the restore and VM controllers beside it. As in the
// restore tests, the test stands in for the snapshot controller (a finished snapshot s1 of the VM vm) and for the
// DataVolume controller (each restored DataVolume marked Succeeded).

const test = standInSnapshotTest;

const NEW_MAC = "02:00:00:00:00:99";

const cloneOf = (namespace: string, name: string, spec: Partial<VirtualMachineClone["spec"]>): VirtualMachineClone => ({
  apiVersion: "clone.kubevirt.io/v1beta1",
  kind: "VirtualMachineClone",
  metadata: { name, namespace },
  spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" }, ...spec },
});
const getClone = (client: KubeClient, namespace: string, name: string) =>
  getObject<VirtualMachineClone>(client, kubevirtResources.virtualMachineClones, namespace, name);
const phase = async (client: KubeClient, namespace: string, name: string) =>
  (await getClone(client, namespace, name))?.status?.phase;
const readyMessage = async (client: KubeClient, namespace: string, name: string) =>
  (await getClone(client, namespace, name))?.status?.conditions?.find((c) => c.type === "Ready")?.message;

describe("VirtualMachineClone", () => {
  test("clones a snapshot into a new VM with the MAC it names, then lets go of its restore", async ({
    client,
    namespace,
  }) => {
    await stoppedVmWithSnapshot(client, namespace);
    await client.create(
      kubevirtResources.virtualMachineClones,
      namespace,
      cloneOf(namespace, "c1", {
        source: { apiGroup: "snapshot.kubevirt.io", kind: "VirtualMachineSnapshot", name: "s1" },
        target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "copy" },
        labelFilters: ["*", "!app"],
        newMacAddresses: { default: NEW_MAC },
        patches: ['{"op": "add", "path": "/metadata/labels/cloned", "value": "yes"}'],
      }),
    );
    await expect.poll(() => phase(client, namespace, "c1"), poll).toBe("RestoreInProgress");
    const restoreName = (await getClone(client, namespace, "c1"))?.status?.restoreName ?? "";
    const restore = await getObject<VirtualMachineRestore>(
      client,
      kubevirtResources.virtualMachineRestores,
      namespace,
      restoreName,
    );
    expect(restore?.spec.target.name).toBe("copy");
    expect(restore?.metadata.ownerReferences?.[0]).toMatchObject({ kind: "VirtualMachineClone", name: "c1" });
    await expect
      .poll(async () => {
        const r = await getObject<VirtualMachineRestore>(
          client,
          kubevirtResources.virtualMachineRestores,
          namespace,
          restoreName,
        );
        return r?.status?.restores?.length;
      }, poll)
      .toBe(2);
    const uid = restore?.metadata.uid ?? "";
    await dataVolumeSucceeds(client, namespace, `restore-${uid}-root`);
    await dataVolumeSucceeds(client, namespace, `restore-${uid}-data`);

    await expect.poll(() => phase(client, namespace, "c1"), poll).toBe("Succeeded");
    const copy = await getVm(client, namespace, "copy");
    expect(copy?.spec.runStrategy).toBe("Halted");
    expect(copy?.metadata.labels).toEqual({ cloned: "yes" });
    expect(copy?.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBe(NEW_MAC);
    expect(copy?.spec.template.spec.domain.firmware?.uuid).toBeUndefined();
    const done = await getClone(client, namespace, "c1");
    expect(done?.status?.targetName).toBe("copy");
    expect(done?.status?.creationTime).toBeTruthy();
    expect(await readyMessage(client, namespace, "c1")).toBe("Ready");

    // Once the VM is made the restore goes; the snapshot it came from is the user's and stays.
    await expect
      .poll(() => getObject(client, kubevirtResources.virtualMachineRestores, namespace, restoreName), poll)
      .toBeUndefined();
    await expect.poll(async () => (await getClone(client, namespace, "c1"))?.status?.restoreName, poll).toBeUndefined();
    expect(
      await getObject<VirtualMachineSnapshot>(client, kubevirtResources.virtualMachineSnapshots, namespace, "s1"),
    ).toBeDefined();

    // A clone whose new VM is deleted goes too, as KubeVirt's.
    await client.delete(kubevirtResources.virtualMachines, namespace, "copy");
    await expect.poll(() => getClone(client, namespace, "c1"), poll).toBeUndefined();
  });

  test("snapshots a VM source first, in a snapshot the clone owns", async ({ client, namespace }) => {
    await stoppedVmWithSnapshot(client, namespace);
    await client.create(kubevirtResources.virtualMachineClones, namespace, cloneOf(namespace, "c2", {}));
    await expect.poll(() => phase(client, namespace, "c2"), poll).toBe("SnapshotInProgress");
    const clone = await getClone(client, namespace, "c2");
    const snapshotName = clone?.status?.snapshotName ?? "";
    expect(snapshotName).toBe(`tmp-snapshot-${clone?.metadata.uid ?? ""}`);
    const snapshot = await getObject<VirtualMachineSnapshot>(
      client,
      kubevirtResources.virtualMachineSnapshots,
      namespace,
      snapshotName,
    );
    expect(snapshot?.spec.source.name).toBe("vm");
    expect(snapshot?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "VirtualMachineClone",
      uid: clone?.metadata.uid,
    });
    // No snapshot controller runs here: the clone waits for it, saying so.
    expect(await readyMessage(client, namespace, "c2")).toBe(`Waiting for snapshot ${snapshotName} to be ready`);
  });

  test("fails naming the field when the new VM's name is taken or a patch does not apply", async ({
    client,
    namespace,
  }) => {
    const vm: VirtualMachine = await stoppedVmWithSnapshot(client, namespace);
    await client.create(
      kubevirtResources.virtualMachineClones,
      namespace,
      cloneOf(namespace, "taken", { target: { kind: "VirtualMachine", name: vm.metadata.name ?? "" } }),
    );
    await expect.poll(() => phase(client, namespace, "taken"), poll).toBe("Failed");
    expect(await readyMessage(client, namespace, "taken")).toMatch(
      /^spec\.target\.name: a VirtualMachine vm already exists/,
    );

    await client.create(
      kubevirtResources.virtualMachineClones,
      namespace,
      cloneOf(namespace, "bad-patch", {
        source: { kind: "VirtualMachineSnapshot", name: "s1" },
        patches: ['{"op": "remove", "path": "/spec/nothing"}'],
      }),
    );
    await expect.poll(() => phase(client, namespace, "bad-patch"), poll).toBe("Failed");
    expect(await readyMessage(client, namespace, "bad-patch")).toBe("spec.patches[0]: /spec/nothing: does not exist");

    // The API server refuses what kubevirt-ts does not clone, by path.
    await expect(
      client.create(kubevirtResources.virtualMachineClones, namespace, {
        ...cloneOf(namespace, "pvc", {}),
        spec: { source: { kind: "PersistentVolumeClaim", name: "x" } },
      }),
    ).rejects.toThrow(/spec\.source\.kind/);
  });
});
