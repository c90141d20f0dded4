import { existsSync } from "node:fs";
import type { V1Pod } from "@kubernetes/client-node";
import { LAUNCHER_CONTAINER, LauncherDir, NodeDevices, deviceResourceName } from "@kubevirt-ts/node-contract";
import { LAUNCHER_UID, parseQuantity } from "@kubevirt-ts/kubevirt-api";
import { afterAll, describe, expect, it } from "vitest";
import { core, custom, imageOf, nodeNames, suiteNamespace } from "./cluster.ts";
import { tinyVm } from "../manifests.ts";

// KVM through the handler's device plugin (ADR 23). Each node advertises
// devices.kubevirt.io/kvm (and tun, vhost-net) as the machine has them; with
// useEmulation off in the KubeVirt CR, a launcher pod asks for the kvm
// device. Where the machine has /dev/kvm, the container gets it and libvirt
// starts QEMU with KVM acceleration (the domain is type kvm, QEMU's query-kvm
// says enabled); such a /dev/kvm may not run an ordinary guest, so the VMI
// starts Paused: its guest never runs an instruction, and nothing here
// asserts its progress. Where the machine has none, the pod waits for a node
// with the device, as KubeVirt's does: the VMI says why in the scheduler's
// words and never runs emulated behind the user's back. With emulation on
// again (the local cluster's default), a VMI is emulated.

const { name: namespace, kubectl, get } = suiteNamespace("e2e-kvm");
const poll = { timeout: 180_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");
const KVM = deviceResourceName(NodeDevices.kvm);
/** The nodes are namespaces on this machine and share its /dev (ADR 21): they have KVM as the machine has it. */
const machineHasKvm = existsSync(NodeDevices.kvm.path);
/** The launcher's libvirt (session mode, its socket under the launcher's state folder). */
const LIBVIRT_URI = `qemu+unix:///session?socket=${LauncherDir.state}/libvirt/run/libvirt/libvirt-sock`;
/** The cluster's live configuration, which the chart creates. */
const KUBEVIRT_CR = ["kubevirt", "kubevirt-ts", "-n", "kubevirt-ts"] as const;

interface Condition {
  type: string;
  status: string;
}

/**
 * A named CPU model every node's labeller found usable. Not the default host-model: this machine's KVM refuses the
 * host CPU's IA32_ARCH_CAPABILITIES MSR (QEMU: "failed to set MSR 0x10a"), even for a paused guest; these older
 * models do not carry it.
 */
async function namedCpuModel(): Promise<string> {
  const labels = await Promise.all(
    nodeNames.map(async (node) => (await core.readNode({ name: node })).metadata?.labels ?? {}),
  );
  const model = ["Nehalem", "Westmere", "Penryn"].find((m) =>
    labels.every((l) => l[`cpu-model.node.kubevirt.io/${m}`] === "true"),
  );
  if (model === undefined)
    throw new Error(
      "no node labels cpu-model.node.kubevirt.io/Nehalem, Westmere or Penryn: the handlers' node labeller has not run",
    );
  return model;
}

/** A VMI of the tiny guest, created with its CPUs stopped (startStrategy Paused). */
function pausedVmi(name: string, cpuModel?: string) {
  const template = tinyVm(name, tinyGuest, namespace).spec.template;
  const domain = cpuModel === undefined ? template.spec.domain : { ...template.spec.domain, cpu: { model: cpuModel } };
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name, namespace },
    spec: { ...template.spec, domain, startStrategy: "Paused" },
  };
}

async function launcherPodOf(vmi: string): Promise<V1Pod | undefined> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" });
  return pods.items.find((p) =>
    p.metadata?.ownerReferences?.some((o) => o.kind === "VirtualMachineInstance" && o.name === vmi),
  );
}

const kvmLimit = (pod: V1Pod | undefined) =>
  pod?.spec?.containers.find((c) => c.name === LAUNCHER_CONTAINER)?.resources?.limits?.[KVM];

async function deleteVmi(name: string) {
  await kubectl("delete", "vmi", name, "-n", namespace, "--ignore-not-found", "--wait=true", "--timeout=120s");
}

/**
 * A paused VMI whose launcher pod was rendered with the configuration wanted: the components apply a change to the
 * KubeVirt CR as they see it, so a VMI created just before may still get the old one; it is deleted and made again.
 */
async function vmiRenderedWith(
  prefix: string,
  wantsKvm: boolean,
  cpuModel?: string,
): Promise<{ name: string; pod: V1Pod }> {
  const end = Date.now() + 120_000;
  for (let attempt = 0; ; attempt++) {
    const name = `${prefix}-${String(attempt)}`;
    await custom.createNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachineinstances",
      body: pausedVmi(name, cpuModel),
    });
    await expect.poll(() => launcherPodOf(name), poll).toBeDefined();
    const pod = await launcherPodOf(name);
    if (pod && (kvmLimit(pod) === "1") === wantsKvm) return { name, pod };
    await deleteVmi(name);
    if (Date.now() > end)
      throw new Error(
        `no launcher pod was rendered ${wantsKvm ? "with" : "without"} ${KVM} within ` +
          "2 minutes of the KubeVirt CR's change",
      );
    await new Promise((r) => setTimeout(r, 2000));
  }
}

async function setUseEmulation(value: boolean | null) {
  await kubectl(
    "patch",
    ...KUBEVIRT_CR,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { configuration: { developerConfiguration: { useEmulation: value } } } }),
  );
}

/** The CR's useEmulation before the suite changed it (undefined: unset), restored after it. */
let useEmulationBefore: boolean | undefined;
let changed = false;
afterAll(async () => {
  if (changed) await setUseEmulation(useEmulationBefore ?? null);
});

/** On a machine with /dev/kvm: the launcher's container has the device, and its domain runs accelerated by it. */
async function runsWithKvm(name: string, pod: V1Pod) {
  await expect.poll(async () => (await get("virtualmachineinstances", name))?.status?.phase, poll).toBe("Running");
  const vmi = await get("virtualmachineinstances", name);
  const conditions = (vmi?.status?.conditions ?? []) as Condition[];
  expect(conditions.find((c) => c.type === "Paused")?.status).toBe("True");
  expect(conditions.find((c) => c.type === "SoftwareEmulation")).toBeUndefined();

  const podName = pod.metadata?.name ?? "";
  const exec = (...command: string[]) =>
    kubectl("exec", "-n", namespace, podName, "-c", LAUNCHER_CONTAINER, "--", ...command);
  // The kubelet put the node's device in the container, owned by the launcher's user (containerd's
  // device_ownership_from_security_context).
  expect((await exec("stat", "-c", "%F %u", NodeDevices.kvm.path)).trim()).toBe(
    `character special file ${String(LAUNCHER_UID)}`,
  );
  const domain = `${namespace}_${name}`;
  expect(await exec("virsh", "-c", LIBVIRT_URI, "dumpxml", domain)).toMatch(/^<domain type='kvm'/);
  const queryKvm = JSON.parse(
    await exec("virsh", "-c", LIBVIRT_URI, "qemu-monitor-command", domain, JSON.stringify({ execute: "query-kvm" })),
  ) as { return?: { enabled?: boolean; present?: boolean } };
  expect(queryKvm.return).toEqual({ enabled: true, present: true });
}

/**
 * On a machine without /dev/kvm: no node has the device, so the launcher pod stays unscheduled, and the VMI says why
 * in the scheduler's words, never falling back to emulation.
 */
async function waitsForKvm(name: string, pod: V1Pod) {
  const scheduled = async () =>
    ((await get("virtualmachineinstances", name))?.status?.conditions as Condition[] | undefined)?.find(
      (c) => c.type === "PodScheduled",
    );
  await expect.poll(scheduled, poll).toMatchObject({
    status: "False",
    reason: "Unschedulable",
    message: expect.stringContaining(`Insufficient ${KVM}`) as unknown,
  });
  const vmi = await get("virtualmachineinstances", name);
  expect(vmi?.status?.phase).toMatch(/^(Pending|Scheduling)$/);
  const conditions = (vmi?.status?.conditions ?? []) as Condition[];
  expect(conditions.find((c) => c.type === "SoftwareEmulation")).toBeUndefined();
  const now = await core.readNamespacedPod({ namespace, name: pod.metadata?.name ?? "" });
  expect(now.spec?.nodeName).toBeUndefined();
  expect(now.status?.phase).toBe("Pending");
}

describe("KVM through the device plugin", () => {
  it("each node advertises devices.kubevirt.io/kvm, tun and vhost-net as the machine has them", async () => {
    for (const device of [NodeDevices.kvm, NodeDevices.tun, NodeDevices.vhostNet]) {
      // A device the machine lacks has no units.
      const units = existsSync(device.path) ? 1000 : 0;
      for (const node of nodeNames) {
        // The API server writes 1000 as "1k".
        await expect
          .poll(
            async () =>
              parseQuantity(
                (await core.readNode({ name: node })).status?.allocatable?.[deviceResourceName(device)] ?? "absent",
              ),
            poll,
          )
          .toBe(units);
      }
    }
  });

  it("with useEmulation off, a launcher asks for kvm: it runs with KVM where a node has it, else waits", async () => {
    const cr = JSON.parse(await kubectl("get", ...KUBEVIRT_CR, "-o", "json")) as {
      spec?: { configuration?: { developerConfiguration?: { useEmulation?: boolean } } };
    };
    useEmulationBefore = cr.spec?.configuration?.developerConfiguration?.useEmulation;
    changed = true;
    await setUseEmulation(false);

    const { name, pod } = await vmiRenderedWith("kvm", true, machineHasKvm ? await namedCpuModel() : undefined);
    expect(kvmLimit(pod)).toBe("1");
    if (machineHasKvm) await runsWithKvm(name, pod);
    else await waitsForKvm(name, pod);
    await deleteVmi(name);
  });

  it("with useEmulation on again, a launcher asks for no device and its guest is emulated", async () => {
    await setUseEmulation(true);
    const { name, pod } = await vmiRenderedWith("emulated", false);
    expect(kvmLimit(pod)).toBeUndefined();
    await expect
      .poll(
        async () =>
          ((await get("virtualmachineinstances", name))?.status?.conditions as Condition[] | undefined)?.find(
            (c) => c.type === "SoftwareEmulation",
          )?.status,
        poll,
      )
      .toBe("True");
    await deleteVmi(name);
  });
});
