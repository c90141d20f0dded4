import {
  ControllerManager,
  type KubeClient,
  type PersistentVolumeClaim,
  type Pod,
  createEventRecorder,
  resources,
} from "@kubevirt-ts/kube";
import {
  Label,
  LabelValue,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  kubevirtResources,
  snapshotContentName,
  volumeCopyName,
  volumeCopyOf,
} from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { describe, expect } from "vitest";
import { claimCopyPodName } from "../src/datavolume/importer-pod.ts";
import { markPatch, registerSnapshotController, snapshotIndexers } from "../src/snapshot/controller.ts";
import { getObject, getVm, testClient, clientTest } from "./harness.ts";

// The snapshot controller against a real kube-apiserver. There is no kubelet, no virt-api and no garbage collector
// here: the test stands in for the kubelet by ending each copy pod, and for the handler by writing the VMI's
// fsFreezeStatus; the copy claims stay Pending. What the copy pods do on a node is the e2e suite's.

interface Running {
  stop(): Promise<void>;
}

async function startSnapshotController(namespace: string): Promise<Running> {
  const registry = new Registry();
  const client = await testClient();
  const log = createLogger({ component: "snapshot-test", level: "warn" });
  const manager = new ControllerManager({ log, registry });
  const informer = <T extends { metadata: object }>(type: Parameters<typeof manager.informer>[0]["type"]) =>
    manager.informer<T & { metadata: { name?: string } }>({ client, type, namespace, resyncMs: 60_000 });
  registerSnapshotController(manager, {
    client,
    snapshots: manager.informer<VirtualMachineSnapshot>({
      client,
      type: kubevirtResources.virtualMachineSnapshots,
      namespace,
      resyncMs: 60_000,
      indexers: snapshotIndexers,
    }),
    contents: informer<VirtualMachineSnapshotContent>(kubevirtResources.virtualMachineSnapshotContents),
    vms: informer<VirtualMachine>(kubevirtResources.virtualMachines),
    vmis: informer<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances),
    claims: informer<PersistentVolumeClaim>(resources.persistentVolumeClaims),
    pods: manager.informer<Pod>({
      client,
      type: resources.pods,
      namespace,
      resyncMs: 60_000,
      labelSelector: `${Label.App}=${LabelValue.Importer}`,
    }),
    recorder: createEventRecorder(client, "snapshot-test", log),
    log,
    now: () => new Date(),
    importer: {
      importerImage: "kubevirt-ts.local/importer:test",
      imagePullPolicy: "IfNotPresent",
      uploadMasterKey: Buffer.alloc(32, 1),
    },
    workers: 1,
  });
  const abort = new AbortController();
  const informers = manager.runInformers(abort.signal);
  const running = manager.runControllers(abort.signal);
  return {
    stop: async () => {
      abort.abort();
      await Promise.all([informers, running]);
    },
  };
}

const withClient = clientTest;

const test = withClient.extend<{ ctl: Running }>({
  ctl: [
    async ({ namespace }, use) => {
      const ctl = await startSnapshotController(namespace);
      await use(ctl);
      await ctl.stop();
    },
    { auto: true },
  ],
});

const poll = { timeout: 20_000, interval: 100 };

const claim = (name: string, namespace: string): PersistentVolumeClaim => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, namespace },
  spec: {
    accessModes: ["ReadWriteOnce"],
    storageClassName: "local-path",
    volumeMode: "Filesystem",
    resources: { requests: { storage: "1Gi" } },
  },
});

const vmOf = (namespace: string): VirtualMachine => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "vm", namespace },
  spec: {
    runStrategy: "Halted",
    template: {
      spec: {
        domain: {
          memory: { guest: "128Mi" },
          devices: {
            disks: [
              { name: "root", disk: { bus: "virtio" } },
              { name: "boot", disk: { bus: "virtio" } },
            ],
          },
        },
        volumes: [
          { name: "root", persistentVolumeClaim: { claimName: "root-claim" } },
          { name: "boot", containerDisk: { image: "quay.io/containerdisks/fedora:40" } },
        ],
      },
    },
  },
});

const snapshotOf = (namespace: string, spec: Partial<VirtualMachineSnapshot["spec"]> = {}): VirtualMachineSnapshot => ({
  apiVersion: "snapshot.kubevirt.io/v1beta1",
  kind: "VirtualMachineSnapshot",
  metadata: { name: "snap", namespace },
  spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "vm" }, ...spec },
});

const getSnapshot = (client: KubeClient, namespace: string) =>
  getObject<VirtualMachineSnapshot>(client, kubevirtResources.virtualMachineSnapshots, namespace, "snap");
const getContent = (client: KubeClient, namespace: string, uid: string) =>
  getObject<VirtualMachineSnapshotContent>(
    client,
    kubevirtResources.virtualMachineSnapshotContents,
    namespace,
    snapshotContentName(uid),
  );
const getPod = (client: KubeClient, namespace: string, uid: string, volume: string) =>
  getObject<Pod>(client, resources.pods, namespace, claimCopyPodName(volumeCopyName(uid, volume)));

/** Stands in for the kubelet: the copy pod ran to its end. */
async function copyPodSucceeds(client: KubeClient, namespace: string, uid: string, volume: string): Promise<void> {
  await expect.poll(() => getPod(client, namespace, uid, volume), poll).toBeDefined();
  const pod = await getPod(client, namespace, uid, volume);
  if (!pod) throw new Error("no copy pod");
  await client.update(resources.pods, { ...pod, status: { phase: "Succeeded" } }, "status");
}

const envOf = (pod: Pod | undefined) =>
  Object.fromEntries((pod?.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));

describe("VirtualMachineSnapshot", () => {
  test("of a stopped VM: its content, a copy claim and pod per claim volume, then ready", async ({
    client,
    namespace,
  }) => {
    await client.create(resources.persistentVolumeClaims, namespace, claim("root-claim", namespace));
    const vm = await client.create<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vmOf(namespace));
    const created = await client.create<VirtualMachineSnapshot>(
      kubevirtResources.virtualMachineSnapshots,
      namespace,
      snapshotOf(namespace),
    );
    const uid = created.metadata.uid ?? "";

    await expect
      .poll(() => getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress), poll)
      .toBe("snap");
    await expect.poll(() => getContent(client, namespace, uid), poll).toBeDefined();
    const content = await getContent(client, namespace, uid);
    expect(content?.metadata.ownerReferences).toMatchObject([{ kind: "VirtualMachineSnapshot", uid }]);
    expect(content?.spec.source.virtualMachine).toMatchObject({ metadata: { name: "vm", uid: vm.metadata.uid } });
    expect(content?.spec.source.virtualMachine?.spec.template.spec.volumes).toEqual(vm.spec.template.spec.volumes);
    expect(content && volumeCopyOf(content, "root")).toEqual({
      kind: "PersistentVolumeClaim",
      namespace,
      name: volumeCopyName(uid, "root"),
    });

    await expect
      .poll(
        () =>
          getObject<PersistentVolumeClaim>(
            client,
            resources.persistentVolumeClaims,
            namespace,
            volumeCopyName(uid, "root"),
          ),
        poll,
      )
      .toMatchObject({
        metadata: { ownerReferences: [{ kind: "VirtualMachineSnapshotContent", uid: content?.metadata.uid }] },
        spec: { storageClassName: "local-path", volumeMode: "Filesystem", resources: { requests: { storage: "1Gi" } } },
      });
    await expect.poll(() => getPod(client, namespace, uid, "root"), poll).toBeDefined();
    const pod = await getPod(client, namespace, uid, "root");
    expect(pod?.spec?.volumes).toContainEqual({
      name: "source",
      persistentVolumeClaim: { claimName: "root-claim", readOnly: true },
    });
    expect(envOf(pod)).toMatchObject({ IMPORTER_SOURCE: "pvc", IMPORTER_SOURCE_IN_USE: "false" });
    expect((await getSnapshot(client, namespace))?.status).toMatchObject({
      phase: "InProgress",
      readyToUse: false,
      sourceUID: vm.metadata.uid,
      virtualMachineSnapshotContentName: snapshotContentName(uid),
      snapshotVolumes: { includedVolumes: ["root"], excludedVolumes: ["boot"] },
    });

    await copyPodSucceeds(client, namespace, uid, "root");
    await expect.poll(() => getSnapshot(client, namespace).then((s) => s?.status?.phase), poll).toBe("Succeeded");
    const done = await getSnapshot(client, namespace);
    expect(done?.status?.readyToUse).toBe(true);
    expect(done?.status?.creationTime).toEqual(expect.any(String));
    expect(done?.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect((await getContent(client, namespace, uid))?.status).toMatchObject({ readyToUse: true });
    await expect
      .poll(() => getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress), poll)
      .toBeUndefined();
    await expect.poll(() => getPod(client, namespace, uid, "root"), poll).toBeUndefined();

    // Deleted, it lets go of its finalizer (the garbage collector, absent here, then takes the content by its owner).
    await client.delete(kubevirtResources.virtualMachineSnapshots, namespace, "snap");
    await expect.poll(() => getSnapshot(client, namespace), poll).toBeUndefined();
  });

  test("of a running VM with a guest agent: no copy starts before the guest is frozen", async ({
    client,
    namespace,
  }) => {
    await client.create(resources.persistentVolumeClaims, namespace, claim("root-claim", namespace));
    await client.create<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vmOf(namespace));
    const running: VirtualMachineInstance = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name: "vm", namespace },
      spec: vmOf(namespace).spec.template.spec,
      status: { phase: "Running", conditions: [{ type: "AgentConnected", status: "True" }] },
    };
    const vmi = await client.create<VirtualMachineInstance>(
      kubevirtResources.virtualMachineInstances,
      namespace,
      running,
    );
    const created = await client.create<VirtualMachineSnapshot>(
      kubevirtResources.virtualMachineSnapshots,
      namespace,
      snapshotOf(namespace),
    );
    const uid = created.metadata.uid ?? "";
    await expect
      .poll(() => getSnapshot(client, namespace).then((s) => s?.status?.indications), poll)
      .toEqual(["Online", "GuestAgent"]);
    // virt-api is not here: the freeze fails, the snapshot says so, and no copy pod is made meanwhile.
    await expect
      .poll(() => getSnapshot(client, namespace).then((s) => s?.status?.error?.message), poll)
      .toMatch(
        /^quiesce failed: update \/apis\/subresources.kubevirt.io\/v1\/.*\/virtualmachineinstances\/vm\/freeze: 404/,
      );
    expect(await getPod(client, namespace, uid, "root")).toBeUndefined();

    // The handler reports the guest frozen: the copy reads the disk the running QEMU holds.
    await client.update(kubevirtResources.virtualMachineInstances, {
      ...vmi,
      status: { ...vmi.status, fsFreezeStatus: "frozen" },
    });
    await expect.poll(() => getPod(client, namespace, uid, "root"), poll).toBeDefined();
    expect(envOf(await getPod(client, namespace, uid, "root"))).toMatchObject({ IMPORTER_SOURCE_IN_USE: "true" });
  });

  test("fails at its failure deadline and lets go of the VM", async ({ client, namespace }) => {
    // The VM's claim never comes: the snapshot cannot go on.
    await client.create<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vmOf(namespace));
    await client.create(
      kubevirtResources.virtualMachineSnapshots,
      namespace,
      snapshotOf(namespace, { failureDeadline: "3s" }),
    );
    // The VM is marked while the snapshot waits, and the mark lifted when it fails.
    await expect
      .poll(() => getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress), poll)
      .toBe("snap");
    await expect.poll(() => getSnapshot(client, namespace).then((s) => s?.status?.phase), poll).toBe("Failed");
    const failed = await getSnapshot(client, namespace);
    expect(failed?.status?.error?.message).toContain("failureDeadline (3s)");
    expect(failed?.status?.readyToUse).toBe(false);
    await expect
      .poll(() => getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress), poll)
      .toBeUndefined();
  });

  test("deleted in progress: says Deleting while it lets go of the VM, then is gone", async ({ client, namespace }) => {
    // The VM's claim never comes: the snapshot stays in progress, the VM marked.
    await client.create<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vmOf(namespace));
    const created = await client.create<VirtualMachineSnapshot>(
      kubevirtResources.virtualMachineSnapshots,
      namespace,
      snapshotOf(namespace),
    );
    await expect
      .poll(() => getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress), poll)
      .toBe("snap");
    // Every phase the snapshot is written with from here on, as a watch sees each write, to its deletion.
    const seen: string[] = [];
    const abort = new AbortController();
    const watched = client
      .watch<VirtualMachineSnapshot>(
        kubevirtResources.virtualMachineSnapshots,
        namespace,
        { fieldSelector: "metadata.name=snap", resourceVersion: created.metadata.resourceVersion },
        (event) => {
          seen.push(event.type === "DELETED" ? "(deleted)" : (event.object.status?.phase ?? "(none)"));
        },
        abort.signal,
      )
      .catch(() => undefined);
    await client.delete(kubevirtResources.virtualMachineSnapshots, namespace, "snap");
    await expect.poll(() => seen.at(-1), poll).toBe("(deleted)");
    abort.abort();
    await watched;
    expect(seen.slice(-2)).toEqual(["Deleting", "(deleted)"]);
    expect(await getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress)).toBeUndefined();
  });

  test("marks the VM only if no snapshot nor restore has marked it: waits for a restore", async ({
    client,
    namespace,
  }) => {
    const vm = await client.create<VirtualMachine>(kubevirtResources.virtualMachines, namespace, vmOf(namespace));
    const restoring = await client.update<VirtualMachine>(
      kubevirtResources.virtualMachines,
      { ...vm, status: { restoreInProgress: "restore" } },
      "status",
    );
    // A mark decided from a VM seen before the restore marked it is refused by the API server, VM unchanged.
    const mark = { kind: "markVm" as const, snapshot: "other", vm: { ...vm, status: {} } };
    await expect(
      client.patch(kubevirtResources.virtualMachines, namespace, "vm", markPatch(mark), "json", "status"),
    ).rejects.toThrow(/: 422 /);
    await expect(
      client.patch(kubevirtResources.virtualMachines, namespace, "vm", markPatch({ ...mark, vm }), "json", "status"),
    ).rejects.toThrow(/: 422 /);
    expect((await getVm(client, namespace, "vm"))?.status).toEqual({ restoreInProgress: "restore" });

    await client.create(kubevirtResources.virtualMachineSnapshots, namespace, snapshotOf(namespace));
    await expect
      .poll(() => getSnapshot(client, namespace).then((s) => s?.status?.conditions?.[0]?.message), poll)
      .toBe("restore restore of the VM is under way; the snapshot waits for it");
    expect((await getVm(client, namespace, "vm"))?.status?.snapshotInProgress).toBeUndefined();

    // The restore done, the snapshot marks the VM; a second mark, or a lift by another snapshot, is refused.
    await client.update(kubevirtResources.virtualMachines, { ...restoring, status: {} }, "status");
    await expect
      .poll(() => getVm(client, namespace, "vm").then((v) => v?.status?.snapshotInProgress), poll)
      .toBe("snap");
    const marked = { ...vm, status: {} };
    await expect(
      client.patch(
        kubevirtResources.virtualMachines,
        namespace,
        "vm",
        markPatch({ ...mark, vm: marked }),
        "json",
        "status",
      ),
    ).rejects.toThrow(/: 422 /);
    const lift = { kind: "markVm" as const, snapshot: null, vm: { ...vm, status: { snapshotInProgress: "other" } } };
    await expect(
      client.patch(kubevirtResources.virtualMachines, namespace, "vm", markPatch(lift), "json", "status"),
    ).rejects.toThrow(/: 422 /);
    expect((await getVm(client, namespace, "vm"))?.status?.snapshotInProgress).toBe("snap");
  });

  test("refuses what kubevirt-ts does not build, naming the field", async ({ client, namespace }) => {
    await expect(
      client.create(
        kubevirtResources.virtualMachineSnapshots,
        namespace,
        snapshotOf(namespace, { snapshotMode: "External" as never }),
      ),
    ).rejects.toThrow(/spec\.snapshotMode.*Unsupported value: "External"/s);
  });
});
