import { randomBytes } from "node:crypto";
import {
  type KubeClient,
  type KubeObject,
  type OwnerReference,
  type Pod,
  isNotFound,
  resources,
} from "@kubevirt-ts/kube";
import {
  INSTANCETYPE_API_VERSION,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VmSpec,
  controllerRevisions,
  instancetypeResources,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect } from "vitest";
import { decoyPod, newVm, newVmi, vmiSpec } from "./builders.ts";
import {
  type RunningControllers,
  getObject,
  getVm,
  getVmi,
  launcherPods,
  metricValue,
  startControllers,
  clientTest,
} from "./harness.ts";

// The VM and VMI controllers against a real kube-apiserver. There is no
// scheduler or kubelet here: launcher pods stay Pending, so VMIs stop at
// Scheduling; the end-to-end suite follows them further on a real node.

const withClient = clientTest;

const test = withClient.extend<{ ctl: RunningControllers }>({
  // Every test runs with the controllers watching its namespace, whether or not it looks at them.
  ctl: [
    async ({ namespace }, use) => {
      const ctl = await startControllers(namespace);
      await use(ctl);
      await ctl.stop();
    },
    { auto: true },
  ],
});

const poll = { timeout: 20_000, interval: 100 };

async function createVm(client: KubeClient, vm: VirtualMachine): Promise<VirtualMachine> {
  return client.create(kubevirtResources.virtualMachines, vm.metadata.namespace, vm);
}

async function setSpec(
  client: KubeClient,
  namespace: string,
  name: string,
  spec: Partial<VmSpec> & Record<string, unknown>,
): Promise<void> {
  await client.patch(kubevirtResources.virtualMachines, namespace, name, { spec }, "merge");
}

/** What KubeVirt's start/stop/restart subresources do: append requests to the VM's status. */
async function request(
  client: KubeClient,
  namespace: string,
  name: string,
  requests: { action: "Start" | "Stop"; uid?: string }[],
): Promise<void> {
  await client.patch(
    kubevirtResources.virtualMachines,
    namespace,
    name,
    { status: { stateChangeRequests: requests } },
    "merge",
    "status",
  );
}

const printable = async (client: KubeClient, namespace: string, name: string) =>
  (await getVm(client, namespace, name))?.status?.printableStatus;

describe("run strategies", () => {
  test("Always creates the VMI, owned by the VM, and exactly one launcher pod", async ({ client, namespace }) => {
    await createVm(client, newVm("always", "Always", namespace));
    await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(1);
    const vm = await getVm(client, namespace, "always");
    const vmi = await getVmi(client, namespace, "always");
    expect(vmi?.metadata.ownerReferences).toEqual([
      {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachine",
        name: "always",
        uid: vm?.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(vmi?.spec.domain.machine?.type).toBe("q35");
    await expect.poll(async () => (await getVmi(client, namespace, "always"))?.status?.phase, poll).toBe("Scheduling");
    await expect.poll(() => printable(client, namespace, "always"), poll).toBe("Starting");
    const status = (await getVm(client, namespace, "always"))?.status;
    expect(status).toMatchObject({ created: true, ready: false, runStrategy: "Always" });
    const [pod] = await launcherPods(client, namespace);
    expect(pod?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "VirtualMachineInstance",
      name: "always",
      uid: vmi?.metadata.uid,
    });
  });

  test("Halted creates nothing and shows Stopped", async ({ client, namespace }) => {
    await createVm(client, newVm("halted", "Halted", namespace));
    await expect.poll(() => printable(client, namespace, "halted"), poll).toBe("Stopped");
    expect(await getVmi(client, namespace, "halted")).toBeUndefined();
  });

  test.for(["RerunOnFailure", "Once"] as const)(
    "%s starts the VM when it is created",
    async (runStrategy, { client, namespace }) => {
      await createVm(client, newVm("vm", runStrategy, namespace));
      await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.status?.phase, poll).toBe("Scheduling");
    },
  );

  test("the deprecated running: true runs the VM like Always", async ({ client, namespace }) => {
    const vm = newVm("legacy", "Always", namespace);
    delete vm.spec.runStrategy;
    vm.spec.running = true;
    await createVm(client, vm);
    await expect.poll(async () => (await getVmi(client, namespace, "legacy")) !== undefined, poll).toBe(true);
    // The VM's status is written after its VMI is created, so it is waited for too.
    await expect.poll(async () => (await getVm(client, namespace, "legacy"))?.status?.runStrategy, poll).toBe("Always");
  });

  test("Manual starts and stops only on request", async ({ client, namespace }) => {
    await createVm(client, newVm("manual", "Manual", namespace));
    await expect.poll(() => printable(client, namespace, "manual"), poll).toBe("Stopped");
    expect(await getVmi(client, namespace, "manual")).toBeUndefined();

    await request(client, namespace, "manual", [{ action: "Start" }]);
    await expect.poll(async () => (await getVmi(client, namespace, "manual"))?.status?.phase, poll).toBe("Scheduling");
    await expect
      .poll(async () => (await getVm(client, namespace, "manual"))?.status?.stateChangeRequests, poll)
      .toBeUndefined();

    const uid = (await getVmi(client, namespace, "manual"))?.metadata.uid;
    await request(client, namespace, "manual", [{ action: "Stop", uid }]);
    await expect.poll(() => getVmi(client, namespace, "manual"), poll).toBeUndefined();
    await expect.poll(() => printable(client, namespace, "manual"), poll).toBe("Stopped");
    expect(await launcherPods(client, namespace)).toEqual([]);
  });
});

describe("instancetypes and preferences", () => {
  test(
    "size the VMI from a ControllerRevision owned by the VM, which later edits of the " +
      "instancetype do not change, and which another VM can name",
    async ({ client, namespace }) => {
      const instancetypes = instancetypeResources.VirtualMachineInstancetype;
      await client.create(instancetypes, namespace, {
        apiVersion: INSTANCETYPE_API_VERSION,
        kind: "VirtualMachineInstancetype",
        metadata: { name: "small" },
        spec: { cpu: { guest: 2 }, memory: { guest: "256Mi" }, annotations: { size: "small" } },
      });
      await client.create(instancetypeResources.VirtualMachinePreference, namespace, {
        apiVersion: INSTANCETYPE_API_VERSION,
        kind: "VirtualMachinePreference",
        metadata: { name: "virtio" },
        spec: { cpu: { preferredCPUTopology: "cores" }, devices: { preferredDiskBus: "virtio" } },
      });
      const vm = newVm("sized", "Always", namespace);
      vm.spec.instancetype = { name: "small", kind: "VirtualMachineInstancetype" };
      vm.spec.preference = { name: "virtio", kind: "virtualmachinepreference" };
      vm.spec.template.spec.domain = { devices: {} };
      const created = await createVm(client, vm);

      await expect.poll(() => getVmi(client, namespace, "sized"), poll).toBeDefined();
      const vmi = await getVmi(client, namespace, "sized");
      expect(vmi?.spec.domain.cpu).toMatchObject({ sockets: 1, cores: 2, threads: 1 });
      expect(vmi?.spec.domain.memory?.guest).toBe("256Mi");
      expect(vmi?.spec.domain.devices.disks).toEqual([{ name: "root", disk: { bus: "virtio" } }]);
      expect(vmi?.metadata.annotations).toEqual({ size: "small", "kubevirt.io/vm-generation": "1" });

      await expect
        .poll(async () => (await getVm(client, namespace, "sized"))?.status?.instancetypeRef, poll)
        .toBeDefined();
      const status = (await getVm(client, namespace, "sized"))?.status;
      const small = await client.get(instancetypes, namespace, "small");
      const revision = `sized-small-v1beta1-${small.metadata.uid ?? ""}-1`;
      expect(status?.instancetypeRef).toEqual({
        name: "small",
        kind: "VirtualMachineInstancetype",
        controllerRevisionRef: { name: revision },
      });
      expect(status?.preferenceRef?.controllerRevisionRef?.name).toMatch(/^sized-virtio-v1beta1-/);
      const captured = await client.get<KubeObject & { data: { kind: string; spec: unknown } }>(
        controllerRevisions,
        namespace,
        revision,
      );
      expect(captured.metadata.ownerReferences?.[0]).toMatchObject({
        kind: "VirtualMachine",
        uid: created.metadata.uid,
        controller: true,
      });
      expect(captured.metadata.labels).toMatchObject({
        "instancetype.kubevirt.io/object-name": "small",
        "instancetype.kubevirt.io/object-kind": "VirtualMachineInstancetype",
      });
      expect(captured.data).toMatchObject({ kind: "VirtualMachineInstancetype", spec: { cpu: { guest: 2 } } });

      // Growing the instancetype changes no VM that captured it: a restarted VMI keeps its 2 vCPUs.
      await client.patch(instancetypes, namespace, "small", { spec: { cpu: { guest: 4 } } }, "merge");
      await client.delete(kubevirtResources.virtualMachineInstances, namespace, "sized", { uid: vmi?.metadata.uid });
      await expect
        .poll(async () => (await getVmi(client, namespace, "sized"))?.metadata.uid, poll)
        .not.toBe(vmi?.metadata.uid);
      await expect.poll(async () => (await getVmi(client, namespace, "sized"))?.spec.domain.cpu?.cores, poll).toBe(2);

      // A VM that names the captured revisions (spec.instancetype/preference.revisionName) is sized from them, not from
      // the instancetype as it is now.
      const pinned = newVm("pinned", "Always", namespace);
      pinned.spec.instancetype = { name: "small", kind: "VirtualMachineInstancetype", revisionName: revision };
      pinned.spec.preference = {
        name: "virtio",
        kind: "VirtualMachinePreference",
        revisionName: status?.preferenceRef?.controllerRevisionRef?.name ?? "",
      };
      pinned.spec.template.spec.domain = { devices: {} };
      await createVm(client, pinned);
      await expect
        .poll(async () => (await getVmi(client, namespace, "pinned"))?.spec.domain.cpu, poll)
        .toMatchObject({ sockets: 1, cores: 2 });
    },
  );

  test("a VM whose instancetype is not there yet says so in a Failure condition, and starts once it appears", async ({
    client,
    namespace,
  }) => {
    const vm = newVm("waiting", "Always", namespace);
    vm.spec.instancetype = { name: "later" };
    vm.spec.template.spec.domain = { devices: {} };
    await createVm(client, vm);
    await expect
      .poll(
        async () =>
          (await getVm(client, namespace, "waiting"))?.status?.conditions?.find((c) => c.type === "Failure")?.reason,
        poll,
      )
      .toBe("FailedFindInstancetype");
    expect(await getVmi(client, namespace, "waiting")).toBeUndefined();
    await client.create(instancetypeResources.VirtualMachineClusterInstancetype, undefined, {
      apiVersion: INSTANCETYPE_API_VERSION,
      kind: "VirtualMachineClusterInstancetype",
      metadata: { name: "later", labels: { test: namespace } },
      spec: { cpu: { guest: 1 }, memory: { guest: "128Mi" } },
    });
    try {
      await expect
        .poll(async () => (await getVmi(client, namespace, "waiting"))?.spec.domain.memory?.guest, {
          ...poll,
          timeout: 60_000,
        })
        .toBe("128Mi");
      await expect
        .poll(
          async () =>
            (await getVm(client, namespace, "waiting"))?.status?.conditions?.some((c) => c.type === "Failure"),
          poll,
        )
        .toBe(false);
    } finally {
      await client.delete(instancetypeResources.VirtualMachineClusterInstancetype, undefined, "later");
    }
  });
});

describe("stop, start and restart", () => {
  test(
    "stopping an Always VM (runStrategy Halted) removes its VMI and pod and " +
      "shows Stopped; starting brings them back",
    async ({ client, namespace }) => {
      await createVm(client, newVm("vm", "Always", namespace));
      await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(1);

      await setSpec(client, namespace, "vm", { runStrategy: "Halted" });
      await expect.poll(() => getVmi(client, namespace, "vm"), poll).toBeUndefined();
      await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(0);
      await expect.poll(() => printable(client, namespace, "vm"), poll).toBe("Stopped");

      await setSpec(client, namespace, "vm", { runStrategy: "Always" });
      await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(1);
    },
  );

  test("restart replaces the VMI with a new one", async ({ client, namespace }) => {
    await createVm(client, newVm("vm", "Always", namespace));
    await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.metadata.uid, poll).toBeDefined();
    const first = (await getVmi(client, namespace, "vm"))?.metadata.uid;

    await request(client, namespace, "vm", [{ action: "Stop", uid: first }, { action: "Start" }]);
    await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.metadata.uid, poll).not.toBe(first);
    await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.metadata.uid, poll).toBeDefined();
    await expect
      .poll(async () => (await getVm(client, namespace, "vm"))?.status?.stateChangeRequests, poll)
      .toBeUndefined();
    const pods = await launcherPods(client, namespace);
    expect(pods.map((p) => p.metadata.labels?.["kubevirt.io/created-by"])).toEqual([
      (await getVmi(client, namespace, "vm"))?.metadata.uid,
    ]);
  });
});

describe("a change to a running VM", () => {
  const restartRequired = async (client: KubeClient, namespace: string) =>
    (await getVm(client, namespace, "vm"))?.status?.conditions?.find((c) => c.type === "RestartRequired");
  const startRevisions = async (client: KubeClient, namespace: string) =>
    (await client.list<KubeObject>(controllerRevisions, namespace)).items
      .map((r) => r.metadata.name ?? "")
      .filter((n) => n.startsWith("revision-start-vm-"));

  test("to its template sets RestartRequired, which a restart clears; a run strategy change does not", async ({
    client,
    namespace,
  }) => {
    const created = await createVm(client, newVm("vm", "Always", namespace));
    const uid = created.metadata.uid ?? "";
    await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.metadata.uid, poll).toBeDefined();
    // As KubeVirt keeps it: the VM's spec at the start, in a revision the VM owns, and its generation on the VMI.
    const first = await getVmi(client, namespace, "vm");
    expect(first?.metadata.annotations?.["kubevirt.io/vm-generation"]).toBe("1");
    const revision = await getObject<KubeObject & { data: { spec: VmSpec }; revision: number }>(
      client,
      controllerRevisions,
      namespace,
      `revision-start-vm-${uid}-1`,
    );
    expect(revision?.metadata.ownerReferences?.[0]).toMatchObject({ kind: "VirtualMachine", uid, controller: true });
    expect(revision?.data.spec.template.spec.domain).toEqual(created.spec.template.spec.domain);
    expect(revision?.revision).toBe(1);

    // A change of the run strategy alone is not the template's.
    await setSpec(client, namespace, "vm", { runStrategy: "RerunOnFailure" });
    await expect
      .poll(async () => (await getVm(client, namespace, "vm"))?.status?.runStrategy, poll)
      .toBe("RerunOnFailure");
    expect(await restartRequired(client, namespace)).toBeUndefined();

    const memory = { guest: "96Mi" };
    await client.patch(
      kubevirtResources.virtualMachines,
      namespace,
      "vm",
      { spec: { template: { spec: { domain: { memory } } } } },
      "merge",
    );
    await expect
      .poll(() => restartRequired(client, namespace), poll)
      .toMatchObject({
        status: "True",
        message: "a non-live-updatable field was changed in the template spec",
      });
    // Staged: the running VMI keeps what it started with.
    expect((await getVmi(client, namespace, "vm"))?.spec.domain.memory?.guest).toBe(first?.spec.domain.memory?.guest);
    expect(first?.spec.domain.memory?.guest).not.toBe("96Mi");

    const generation = String((await getVm(client, namespace, "vm"))?.metadata.generation);
    await request(client, namespace, "vm", [{ action: "Stop", uid: first?.metadata.uid }, { action: "Start" }]);
    await expect
      .poll(
        async () => (await getVmi(client, namespace, "vm"))?.metadata.annotations?.["kubevirt.io/vm-generation"],
        poll,
      )
      .toBe(generation);
    expect((await getVmi(client, namespace, "vm"))?.spec.domain.memory?.guest).toBe("96Mi");
    await expect.poll(() => restartRequired(client, namespace), poll).toBeUndefined();
    // The last start's revision alone is kept.
    expect(await startRevisions(client, namespace)).toEqual([`revision-start-vm-${uid}-${generation}`]);
  });
});

describe("deletion", () => {
  test("deleting a VM removes its VMI and launcher pod, then the VM", async ({ client, namespace }) => {
    await createVm(client, newVm("vm", "Always", namespace));
    await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(1);
    expect((await getVm(client, namespace, "vm"))?.metadata.finalizers).toContain(
      "kubevirt.io/virtualMachineControllerFinalize",
    );

    await client.delete(kubevirtResources.virtualMachines, namespace, "vm");
    await expect.poll(() => getVm(client, namespace, "vm"), poll).toBeUndefined();
    expect(await getVmi(client, namespace, "vm")).toBeUndefined();
    expect(await launcherPods(client, namespace)).toEqual([]);
  });

  test("a VM being deleted reads Terminating while something else's finalizer holds it", async ({
    client,
    namespace,
  }) => {
    const held = newVm("held", "Halted", namespace);
    await createVm(client, { ...held, metadata: { ...held.metadata, finalizers: ["example.com/hold"] } });
    await expect
      .poll(async () => (await getVm(client, namespace, "held"))?.status?.printableStatus, poll)
      .toBe("Stopped");
    await client.delete(kubevirtResources.virtualMachines, namespace, "held");
    await expect
      .poll(async () => (await getVm(client, namespace, "held"))?.status?.printableStatus, poll)
      .toBe("Terminating");
    // The controller's own finalizer goes (in a write of its own, after the status's); the other one still holds the
    // VM.
    await expect
      .poll(async () => (await getVm(client, namespace, "held"))?.metadata.finalizers, poll)
      .toEqual(["example.com/hold"]);
    await client.patch(
      kubevirtResources.virtualMachines,
      namespace,
      "held",
      [{ op: "remove", path: "/metadata/finalizers" }],
      "json",
    );
    await expect.poll(() => getVm(client, namespace, "held"), poll).toBeUndefined();
  });

  test("deleting a VMI removes its launcher pod, then the VMI", async ({ client, namespace }) => {
    await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("vmi", namespace));
    await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(1);
    await client.delete(kubevirtResources.virtualMachineInstances, namespace, "vmi");
    await expect.poll(() => getVmi(client, namespace, "vmi"), poll).toBeUndefined();
    expect(await launcherPods(client, namespace)).toEqual([]);
  });

  test("a finished VMI lets its finalizer go once its pods are gone, before anyone deletes it", async ({
    client,
    namespace,
  }) => {
    await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("vmi", namespace));
    await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(1);
    await expect
      .poll(async () => (await getVmi(client, namespace, "vmi"))?.metadata.finalizers, poll)
      .toContain("kubevirt.io/virtualMachineControllerFinalize");
    // The launcher ends, as the kubelet would report it: the VMI is final, its pod goes, and so does the finalizer.
    const [pod] = await launcherPods(client, namespace);
    await client.patch(
      resources.pods,
      namespace,
      pod?.metadata.name ?? "",
      { status: { phase: "Failed" } },
      "merge",
      "status",
    );
    await expect.poll(async () => (await getVmi(client, namespace, "vmi"))?.status?.phase, poll).toBe("Failed");
    await expect
      .poll(async () => (await getVmi(client, namespace, "vmi"))?.metadata.finalizers ?? [], poll)
      .not.toContain("kubevirt.io/virtualMachineControllerFinalize");
    expect(await launcherPods(client, namespace)).toEqual([]);
    // Nothing holds it now: deleting it (as a namespace's deletion does, after its pods) is done in one step.
    await client.delete(kubevirtResources.virtualMachineInstances, namespace, "vmi");
    expect(await getVmi(client, namespace, "vmi")).toBeUndefined();
  });
});

describe("a launcher pod's grace period", () => {
  test("is its own when its VMI goes, or the VMI's when a forced stop shortened it since", async ({
    client,
    namespace,
  }) => {
    // What the scheduler posts to bind a pod to a node (core v1 bindings).
    const bindings = { group: "", version: "v1", plural: "bindings", namespaced: true };
    /**
     * The VMI's pod, bound to a node (no scheduler runs here), so that deleting it waits for a kubelet that never
     * comes.
     */
    const boundPod = async (vmi: string) => {
      await expect
        .poll(
          async () =>
            (await launcherPods(client, namespace)).filter((p) => p.metadata.ownerReferences?.[0]?.name === vmi).length,
          poll,
        )
        .toBe(1);
      const pod = (await launcherPods(client, namespace)).find((p) => p.metadata.ownerReferences?.[0]?.name === vmi);
      const name = pod?.metadata.name ?? "";
      await client.create(bindings, namespace, {
        apiVersion: "v1",
        kind: "Binding",
        metadata: { name },
        target: { kind: "Node", name: "node-1" },
      } as KubeObject);
      return name;
    };
    const deletionGrace = async (pod: string) =>
      (await client.get<Pod>(resources.pods, namespace, pod)).metadata.deletionGracePeriodSeconds;

    await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("kept", namespace));
    await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("forced", namespace));
    const kept = await boundPod("kept");
    const forced = await boundPod("forced");
    // KubeVirt's stop with gracePeriod 0 sets it on the VMI first.
    await client.patch(
      kubevirtResources.virtualMachineInstances,
      namespace,
      "forced",
      { spec: { terminationGracePeriodSeconds: 0 } },
      "merge",
    );
    await client.delete(kubevirtResources.virtualMachineInstances, namespace, "kept");
    await client.delete(kubevirtResources.virtualMachineInstances, namespace, "forced");
    await expect.poll(() => deletionGrace(kept), poll).toBe(45);
    await expect.poll(() => deletionGrace(forced), poll).toBe(1);
    // No kubelet ends them here: removed by hand, the VMIs follow.
    for (const pod of [kept, forced]) await client.delete(resources.pods, namespace, pod, { gracePeriodSeconds: 0 });
    await expect
      .poll(async () => [await getVmi(client, namespace, "kept"), await getVmi(client, namespace, "forced")], poll)
      .toEqual([undefined, undefined]);
  });
});

describe("an invalid VMI", () => {
  test("gets a condition naming the problem, no pod, and no retry loop", async ({ client, ctl, namespace }) => {
    const spec = vmiSpec();
    spec.domain.devices.disks?.push({ name: "missing", disk: {} });
    await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("bad", namespace, spec));
    await expect
      .poll(
        async () =>
          (await getVmi(client, namespace, "bad"))?.status?.conditions?.find((c) => c.type === "Synchronized"),
        poll,
      )
      .toMatchObject({
        status: "False",
        reason: "InvalidSpec",
        message: expect.stringContaining('spec.domain.devices.disks[1].name "missing" matches no volume') as unknown,
      });
    const reconciles = () => metricValue(ctl.registry, "kubevirt_ts_reconcile_total", { controller: "vmi" });
    // The controller's own status write comes back as a change once more; after that, nothing.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const before = await reconciles();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await reconciles()).toBe(before);
    expect(await launcherPods(client, namespace)).toEqual([]);
    expect((await getVmi(client, namespace, "bad"))?.status?.phase).toBe("Pending");
  });
});

describe("status writes", () => {
  test("a VMI's status is written once per change, and not at all while nothing changes", async ({
    client,
    ctl,
    namespace,
  }) => {
    const writes = () =>
      metricValue(ctl.registry, "kubevirt_rest_client_requests_total", {
        verb: "update",
        resource: "virtualmachineinstances",
        code: "200",
      });
    await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("vmi", namespace));
    await expect.poll(async () => (await getVmi(client, namespace, "vmi"))?.status?.phase, poll).toBe("Scheduling");
    // Scheduling as the pod is created, with Pending since the VMI's creation: one write. (A write refused for a
    // stale resourceVersion changes nothing and is retried: only successful writes count.) The client counts a
    // write once it has read the answer, which can be after this test already sees the written status.
    await expect.poll(writes, poll).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await writes()).toBe(1);
    const phases = (await getVmi(client, namespace, "vmi"))?.status?.phaseTransitionTimestamps?.map((t) => t.phase);
    expect(phases).toEqual(["Pending", "Scheduling"]);
  });
});

describe("a controller killed and restarted", () => {
  // Without the auto-started controllers: this test starts and kills its own.
  withClient("never creates a second pod or loses a VMI", async ({ client, namespace }) => {
    await Promise.all([1, 2, 3].map((i) => createVm(client, newVm(`vm-${String(i)}`, "Always", namespace))));
    // Killed at different points of its work, a bounded number of times.
    for (const delayMs of [0, 50, 150, 300, 600]) {
      const ctl = await startControllers(namespace);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await ctl.stop();
    }
    const final = await startControllers(namespace);
    try {
      await expect.poll(async () => (await launcherPods(client, namespace)).length, poll).toBe(3);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const pods = await launcherPods(client, namespace);
      expect(pods.map((p) => p.metadata.labels?.["vm.kubevirt.io/name"]).sort()).toEqual(["vm-1", "vm-2", "vm-3"]);
      for (const i of [1, 2, 3]) expect(await getVmi(client, namespace, `vm-${String(i)}`)).toBeDefined();
    } finally {
      await final.stop();
    }
  });
});

describe("pods that only claim a VMI", () => {
  // Controllers of their own, watching every namespace, so that decoys in another namespace are in their caches.
  const decoyTest = withClient.extend<{ other: string; decoys: Pod[] }>({
    other: async ({ client, core }, use) => {
      const name = `decoys-${randomBytes(4).toString("hex")}`;
      await client.create(resources.namespaces, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
      await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: "default" } } });
      await use(name);
      await client.delete(resources.namespaces, undefined, name);
    },
    // The decoys a test plants; let go (finalizer removed, deleted) afterwards.
    decoys: async ({ client }, use) => {
      const planted: Pod[] = [];
      await use(planted);
      for (const pod of planted) {
        const { namespace, name = "" } = pod.metadata;
        await client.patch(resources.pods, namespace, name, { metadata: { finalizers: null } }, "merge");
        await client.delete(resources.pods, namespace, name).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
      }
    },
  });

  async function plant(client: KubeClient, decoys: Pod[], pod: Pod): Promise<Pod> {
    const created = await client.create<Pod>(resources.pods, pod.metadata.namespace, pod);
    decoys.push(created);
    return created;
  }

  const forgedRef = (vmi: VirtualMachineInstance, controller: boolean): OwnerReference[] => [
    {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      name: vmi.metadata.name ?? "",
      uid: vmi.metadata.uid ?? "",
      controller,
      blockOwnerDeletion: false,
    },
  ];
  const ownedBy = (vmi: VirtualMachineInstance) => (p: Pod) =>
    p.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === vmi.metadata.uid) === true;
  const unownedEvents = async (client: KubeClient, pod: Pod) =>
    (
      await client.list<KubeObject & { reason?: string }>(resources.events, pod.metadata.namespace, {
        fieldSelector: `involvedObject.name=${pod.metadata.name ?? ""}`,
      })
    ).items.filter((e) => e.reason === "UnownedLauncherPod").length;
  const present = async (client: KubeClient, pod: Pod) => {
    const current = await getObject<Pod>(client, resources.pods, pod.metadata.namespace ?? "", pod.metadata.name ?? "");
    return current !== undefined && !current.metadata.deletionTimestamp;
  };

  decoyTest(
    "never count: the VMI still gets its pod, each decoy is reported once and never deleted, " +
      "and the VMI's deletion finishes while they stay",
    async ({ client, namespace, other, decoys }) => {
      // The decoys are there before the controller first looks at the VMI.
      const vmi = await client.create<VirtualMachineInstance>(
        kubevirtResources.virtualMachineInstances,
        namespace,
        newVmi("vm", namespace),
      );
      const uid = vmi.metadata.uid ?? "";
      await plant(client, decoys, decoyPod("other-labels", other, uid));
      await plant(client, decoys, decoyPod("other-forged", other, uid, forgedRef(vmi, true)));
      await plant(client, decoys, decoyPod("same-labels", namespace, uid));
      await plant(client, decoys, decoyPod("same-not-controller", namespace, uid, forgedRef(vmi, false)));

      const ctl = await startControllers(undefined, { resyncMs: 300 });
      try {
        await expect
          .poll(async () => (await launcherPods(client, namespace)).filter(ownedBy(vmi)).length, poll)
          .toBe(1);
        await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.status?.phase, poll).toBe("Scheduling");
        for (const decoy of decoys) await expect.poll(() => unownedEvents(client, decoy), poll).toBe(1);
        await expect
          .poll(() => metricValue(ctl.registry, "kubevirt_ts_unowned_launcher_pods", {}), poll)
          .toBe(decoys.length);
        // Several resyncs later: still one event each, no decoy deleted, still one pod of the VMI's own.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        for (const decoy of decoys) {
          expect(await unownedEvents(client, decoy)).toBe(1);
          expect(await present(client, decoy)).toBe(true);
        }
        expect((await launcherPods(client, namespace)).filter(ownedBy(vmi))).toHaveLength(1);

        await client.delete(kubevirtResources.virtualMachineInstances, namespace, "vm");
        await expect.poll(() => getVmi(client, namespace, "vm"), poll).toBeUndefined();
        expect((await launcherPods(client, namespace)).filter(ownedBy(vmi))).toEqual([]);
        for (const decoy of decoys) expect(await present(client, decoy)).toBe(true);
      } finally {
        await ctl.stop();
      }
    },
  );

  decoyTest(
    "the VMI deleted while a decoy holds its uid, its pod gone while no controller " +
      "ran, is finalized once one runs again",
    async ({ client, namespace, other, decoys }) => {
      const vmi = await client.create<VirtualMachineInstance>(
        kubevirtResources.virtualMachineInstances,
        namespace,
        newVmi("vm", namespace),
      );
      const first = await startControllers(undefined);
      try {
        await expect
          .poll(async () => (await launcherPods(client, namespace)).filter(ownedBy(vmi)).length, poll)
          .toBe(1);
      } finally {
        await first.stop();
      }
      const held = await plant(client, decoys, decoyPod("held", other, vmi.metadata.uid ?? ""));
      // Nobody watches: the VMI is deleted (its finalizer holds it) and its own pod disappears.
      await client.delete(kubevirtResources.virtualMachineInstances, namespace, "vm");
      for (const pod of (await launcherPods(client, namespace)).filter(ownedBy(vmi)))
        await client.delete(resources.pods, namespace, pod.metadata.name ?? "");
      expect((await getVmi(client, namespace, "vm"))?.metadata.deletionTimestamp).toBeTruthy();

      const second = await startControllers(undefined);
      try {
        await expect.poll(() => getVmi(client, namespace, "vm"), poll).toBeUndefined();
        expect(await present(client, held)).toBe(true);
      } finally {
        await second.stop();
      }
    },
  );

  withClient(
    "every VMI is looked at again each resync period, with nothing changed and nothing written",
    async ({ client, namespace }) => {
      const ctl = await startControllers(namespace, { resyncMs: 300 });
      try {
        await client.create(kubevirtResources.virtualMachineInstances, namespace, newVmi("vm", namespace));
        await expect.poll(async () => (await getVmi(client, namespace, "vm"))?.status?.phase, poll).toBe("Scheduling");
        const reconciles = () => metricValue(ctl.registry, "kubevirt_ts_reconcile_total", { controller: "vmi" });
        const writes = () =>
          metricValue(ctl.registry, "kubevirt_rest_client_requests_total", {
            verb: "update",
            resource: "virtualmachineinstances",
          });
        await new Promise((resolve) => setTimeout(resolve, 500));
        const [reconcilesBefore, writesBefore] = [await reconciles(), await writes()];
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        expect(await reconciles()).toBeGreaterThanOrEqual(reconcilesBefore + 3);
        expect(await writes()).toBe(writesBefore);
      } finally {
        await ctl.stop();
      }
    },
  );
});
