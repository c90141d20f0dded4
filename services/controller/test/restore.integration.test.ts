import { type KubeClient } from "@kubevirt-ts/kube";
import {
  type VirtualMachine,
  type VirtualMachineRestore,
  kubevirtResources,
  snapshotContentName,
  volumeCopyName,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect } from "vitest";
import { getObject, getVm, getVmi } from "./harness.ts";
import {
  poll,
  SNAPSHOT_UID,
  MAC,
  vmWithDisks,
  readySnapshot,
  succeededSnapshot,
  stoppedVmWithSnapshot,
  getDv,
  dataVolumeSucceeds,
  standInSnapshotTest,
} from "./snapshot-fixtures.ts";

// The restore controller against a real kube-apiserver, with the VM controller beside it. There is no kubelet and no
// importer here: the test stands in for the DataVolume controller by marking each restored DataVolume Succeeded, and
// for the snapshot controller by writing a ready snapshot and its content (the copies are claims that stay Pending).

const test = standInSnapshotTest;

function restoreOf(
  namespace: string,
  name: string,
  spec: Partial<VirtualMachineRestore["spec"]>,
): VirtualMachineRestore {
  return {
    apiVersion: "snapshot.kubevirt.io/v1beta1",
    kind: "VirtualMachineRestore",
    metadata: { name, namespace },
    spec: {
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" },
      virtualMachineSnapshotName: "s1",
      ...spec,
    },
  };
}

const getRestore = (client: KubeClient, namespace: string, name: string) =>
  getObject<VirtualMachineRestore>(client, kubevirtResources.virtualMachineRestores, namespace, name);
/** A restore of s1 to a new VM with one patch, its claims filled; the restore's uid. */
async function restoreToNewVm(
  client: KubeClient,
  namespace: string,
  name: string,
  target: string,
  patch: string,
): Promise<string> {
  await client.create(
    kubevirtResources.virtualMachineRestores,
    namespace,
    restoreOf(namespace, name, {
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: target },
      patches: [patch],
    }),
  );
  await expect.poll(async () => (await getRestore(client, namespace, name))?.status?.restores?.length, poll).toBe(2);
  const uid = (await getRestore(client, namespace, name))?.metadata.uid ?? "";
  await dataVolumeSucceeds(client, namespace, `restore-${uid}-root`);
  await dataVolumeSucceeds(client, namespace, `restore-${uid}-data`);
  return uid;
}

const condition = (r: VirtualMachineRestore | undefined, type: string) =>
  r?.status?.conditions?.find((c) => c.type === type);

describe("VirtualMachineRestore", () => {
  test("restores the same VM once it is stopped, holding its start meanwhile", async ({ client, namespace }) => {
    let vm = await client.create<VirtualMachine>(
      kubevirtResources.virtualMachines,
      namespace,
      vmWithDisks(namespace, "Always"),
    );
    await readySnapshot(client, namespace, vm);
    await dataVolumeSucceeds(client, namespace, "vm-root");
    await expect.poll(() => getVmi(client, namespace, "vm"), poll).toBeDefined();

    // A running target fails a FailImmediate restore, and keeps a default one waiting.
    await client.create(
      kubevirtResources.virtualMachineRestores,
      namespace,
      restoreOf(namespace, "now", { targetReadinessPolicy: "FailImmediate" }),
    );
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "now"), "Failure")?.status, poll)
      .toBe("True");
    await client.create(kubevirtResources.virtualMachineRestores, namespace, restoreOf(namespace, "r1", {}));
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "r1"), "Progressing")?.message, poll)
      .toMatch(/Waiting for the restore target to be stopped/);

    await client.patch(
      kubevirtResources.virtualMachines,
      namespace,
      "vm",
      { spec: { runStrategy: "Halted" } },
      "merge",
    );
    await expect.poll(() => getVmi(client, namespace, "vm"), poll).toBeUndefined();
    await expect.poll(async () => (await getVm(client, namespace, "vm"))?.status?.restoreInProgress, poll).toBe("r1");
    const r1 = await getRestore(client, namespace, "r1");
    const uid = r1?.metadata.uid ?? "";
    expect(r1?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "VirtualMachine",
      name: "vm",
      uid: vm.metadata.uid,
    });

    // While the restore runs, the VM is not started.
    await client.patch(
      kubevirtResources.virtualMachines,
      namespace,
      "vm",
      { spec: { runStrategy: "Always" } },
      "merge",
    );
    const rootDv = await (async () => {
      await expect.poll(() => getDv(client, namespace, `restore-${uid}-root`), poll).toBeDefined();
      return getDv(client, namespace, `restore-${uid}-root`);
    })();
    expect(rootDv?.spec.source?.pvc).toEqual({ namespace, name: volumeCopyName(SNAPSHOT_UID, "root") });
    expect(rootDv?.metadata.ownerReferences?.[0]).toMatchObject({ kind: "VirtualMachine", uid: vm.metadata.uid });
    expect(await getVmi(client, namespace, "vm")).toBeUndefined();

    await dataVolumeSucceeds(client, namespace, `restore-${uid}-root`);
    await dataVolumeSucceeds(client, namespace, `restore-${uid}-data`);
    await expect.poll(async () => (await getRestore(client, namespace, "r1"))?.status?.complete, poll).toBe(true);

    const done = await getRestore(client, namespace, "r1");
    expect(done?.status?.restores).toEqual([
      {
        volumeName: "root",
        persistentVolumeClaim: `restore-${uid}-root`,
        volumeSnapshotName: volumeCopyName(SNAPSHOT_UID, "root"),
        dataVolumeName: `restore-${uid}-root`,
      },
      {
        volumeName: "data",
        persistentVolumeClaim: `restore-${uid}-data`,
        volumeSnapshotName: volumeCopyName(SNAPSHOT_UID, "data"),
      },
    ]);
    expect(done?.status?.deletedDataVolumes).toEqual(["vm-root"]);
    expect(done?.status?.restoreTime).toBeTruthy();
    expect(condition(done, "Ready")?.status).toBe("True");
    vm = (await getVm(client, namespace, "vm")) ?? vm;
    expect(vm.spec.template.spec.volumes).toEqual([
      { name: "root", dataVolume: { name: `restore-${uid}-root` } },
      { name: "data", persistentVolumeClaim: { claimName: `restore-${uid}-data` } },
    ]);
    expect(vm.spec.dataVolumeTemplates?.map((t) => t.metadata.name)).toEqual([`restore-${uid}-root`]);
    expect(vm.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBe(MAC);
    expect(vm.metadata.annotations?.["restore.kubevirt.io/lastRestoreUID"]).toBe(`r1-${uid}`);
    await expect.poll(() => getDv(client, namespace, "vm-root"), poll).toBeUndefined();
    // The mark is lifted, and the start the user asked for meanwhile happens.
    await expect
      .poll(async () => (await getVm(client, namespace, "vm"))?.status?.restoreInProgress, poll)
      .toBeUndefined();
    await expect.poll(() => getVmi(client, namespace, "vm"), poll).toBeDefined();
  });

  test("restores to a new VM beside the original, with a new MAC and firmware UUID", async ({ client, namespace }) => {
    const vm = await stoppedVmWithSnapshot(client, namespace);
    const uid = await restoreToNewVm(
      client,
      namespace,
      "copy",
      "vm-copy",
      '{"op":"add","path":"/metadata/labels/copy","value":"yes"}',
    );
    await expect.poll(async () => (await getRestore(client, namespace, "copy"))?.status?.complete, poll).toBe(true);

    const copy = await getVm(client, namespace, "vm-copy");
    expect(copy?.metadata.labels).toEqual({ app: "db", copy: "yes" });
    expect(copy?.spec.runStrategy).toBe("Halted");
    expect(copy?.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBeUndefined();
    expect(copy?.spec.template.spec.domain.firmware?.uuid).toBeUndefined();
    expect(copy?.spec.template.spec.volumes?.[1]).toEqual({
      name: "data",
      persistentVolumeClaim: { claimName: `restore-${uid}-data` },
    });
    // The new VM owns its claims' DataVolumes; the original is untouched.
    await expect
      .poll(
        async () => (await getDv(client, namespace, `restore-${uid}-data`))?.metadata.ownerReferences?.[0]?.uid,
        poll,
      )
      .toBe(copy?.metadata.uid);
    const original = await getVm(client, namespace, "vm");
    expect(original?.spec.template.spec.volumes).toEqual(vm.spec.template.spec.volumes);
    expect(original?.status?.restoreInProgress).toBeUndefined();
    expect(await getDv(client, namespace, "vm-root")).toBeDefined();
  });

  test("a restore that fails once it marked the VM lets the VM start again", async ({ client, namespace }) => {
    const vm = await stoppedVmWithSnapshot(client, namespace, "VolumeSnapshot");
    await client.create(kubevirtResources.virtualMachineRestores, namespace, restoreOf(namespace, "csi", {}));
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "csi"), "Failure")?.message, poll)
      .toMatch(/its copy is the CSI VolumeSnapshot/);
    const after = await getVm(client, namespace, "vm");
    expect(after?.status?.restoreInProgress).toBeUndefined();
    expect(after?.spec.template.spec.volumes).toEqual(vm.spec.template.spec.volumes);
  });

  test("waits while the VM is being snapshotted, then marks it", async ({ client, namespace }) => {
    await stoppedVmWithSnapshot(client, namespace);
    await expect.poll(async () => (await getVm(client, namespace, "vm"))?.status, poll).toBeDefined();
    const setSnapshotting = async (value: string | undefined) => {
      const current = await getVm(client, namespace, "vm");
      if (!current) throw new Error("no VM");
      await client.update(
        kubevirtResources.virtualMachines,
        { ...current, status: { ...current.status, snapshotInProgress: value } },
        "status",
      );
    };
    await setSnapshotting("s0");
    await client.create(kubevirtResources.virtualMachineRestores, namespace, restoreOf(namespace, "r1", {}));
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "r1"), "Progressing")?.message, poll)
      .toBe("the VM is being snapshotted by s0: the restore waits for the snapshot to complete");
    expect((await getVm(client, namespace, "vm"))?.status?.restoreInProgress).toBeUndefined();
    await setSnapshotting(undefined);
    await expect.poll(async () => (await getVm(client, namespace, "vm"))?.status?.restoreInProgress, poll).toBe("r1");
    // The mark's test op holds against a VM marked meanwhile: a second mark is refused, not written over the first.
    const again = [
      { op: "test", path: "/status/restoreInProgress", value: null },
      { op: "add", path: "/status/restoreInProgress", value: "r2" },
    ];
    await expect(
      client.patch(kubevirtResources.virtualMachines, namespace, "vm", again, "json", "status"),
    ).rejects.toMatchObject({ code: expect.toSatisfy((code: number) => code === 409 || code === 422) as number });

    // A deleted restore lets go of the VM it marked.
    await client.delete(kubevirtResources.virtualMachineRestores, namespace, "r1");
    await expect.poll(() => getRestore(client, namespace, "r1"), poll).toBeUndefined();
    expect((await getVm(client, namespace, "vm"))?.status?.restoreInProgress).toBeUndefined();
  });

  test("fails on a content another snapshot made", async ({ client, namespace }) => {
    const vm = await stoppedVmWithSnapshot(client, namespace);
    await succeededSnapshot(client, namespace, "s2", vm, snapshotContentName(SNAPSHOT_UID));
    await client.create(
      kubevirtResources.virtualMachineRestores,
      namespace,
      restoreOf(namespace, "other", { virtualMachineSnapshotName: "s2" }),
    );
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "other"), "Failure")?.message, poll)
      .toBe(
        `VMSnapshotContent ${namespace}/${snapshotContentName(SNAPSHOT_UID)} is VMSnapshot "s1"'s, not s2's: ` +
          "restore from the snapshot the content was made for",
      );
    expect((await getVm(client, namespace, "vm"))?.status?.restoreInProgress).toBeUndefined();
  });

  test("fails when the API server refuses the new VM", async ({ client, namespace }) => {
    await stoppedVmWithSnapshot(client, namespace);
    await restoreToNewVm(
      client,
      namespace,
      "bad",
      "vm-bad",
      '{"op":"add","path":"/metadata/labels/copy","value":"not a label!"}',
    );
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "bad"), "Failure")?.message, poll)
      .toMatch(/^the target VM could not be created: .*422/);
    expect(await getVm(client, namespace, "vm-bad")).toBeUndefined();
  });

  test("refuses what it does not build, by path", async ({ client, namespace }) => {
    await client.create(
      kubevirtResources.virtualMachineRestores,
      namespace,
      restoreOf(namespace, "inplace", { volumeRestorePolicy: "InPlace" }),
    );
    await expect
      .poll(async () => condition(await getRestore(client, namespace, "inplace"), "Failure")?.message, poll)
      .toMatch(/^spec\.volumeRestorePolicy: InPlace/);
  });
});
