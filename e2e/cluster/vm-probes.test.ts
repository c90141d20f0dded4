import { describe, expect, it } from "vitest";
import { tinyVm } from "../manifests.ts";
import { core, custom, imageOf, suiteNamespace } from "./cluster.ts";
import { openConsole } from "./console.ts";

// KubeVirt's liveness and readiness probes, on the tiny guest: the kubelet
// runs them on the launcher container on the VMI's schedule, and the
// launcher checks the guest (ADR 11). A readiness probe drives the VMI's
// Ready condition and its pod's; a liveness probe that fails ends the VMI,
// and its VM starts a new one.

const { name: namespace, get, launcherPods } = suiteNamespace("e2e-probes");
const poll = { timeout: 180_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");

interface Condition { type: string; status: string; reason?: string }
const conditionOf = async (name: string, type: string) => ((await get("virtualmachineinstances", name))?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);

function withProbes(name: string, probes: Record<string, unknown>) {
  const vm = tinyVm(name, tinyGuest, namespace);
  Object.assign(vm.spec.template.spec, probes);
  return vm;
}

describe("a VM with a readiness probe", () => {
  it("is Ready, with its launcher pod, only once the guest accepts connections on the probed port", async () => {
    const vm = withProbes("ready-later", { readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 2, failureThreshold: 1, timeoutSeconds: 2 } });
    await custom.createNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", body: vm });
    await expect.poll(async () => (await get("virtualmachineinstances", "ready-later"))?.status?.phase, poll).toBe("Running");
    // Running, but nothing listens in the guest: QEMU alone would accept the connection; the guest refuses it.
    await expect.poll(() => conditionOf("ready-later", "Ready"), poll).toMatchObject({ status: "False", reason: "GuestNotReady" });
    const [pod] = await launcherPods();
    const compute = pod?.spec?.containers.find((c) => c.name === "compute");
    expect(compute?.readinessProbe).toMatchObject({ httpGet: { path: "/probes/readiness", port: "ops" }, periodSeconds: 2, failureThreshold: 1, timeoutSeconds: 3 });
    expect(pod?.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("False");
    expect((await get("virtualmachines", "ready-later"))?.status?.ready).toBe(false);

    const { ws, received } = await openConsole(namespace, "ready-later", "console");
    ws.send(Buffer.from("nc -ll -p 8080 -e /bin/cat & echo listen''ing\n"));
    await expect.poll(() => received().toString(), poll).toContain("listening");
    ws.close();
    await expect.poll(() => conditionOf("ready-later", "Ready"), poll).toMatchObject({ status: "True" });
    const [readyPod] = await launcherPods();
    expect(readyPod?.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    await expect.poll(async () => (await get("virtualmachines", "ready-later"))?.status?.ready, poll).toBe(true);
    await custom.deleteNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", name: "ready-later" });
  });
});

describe("a VM with a liveness probe that fails", () => {
  it("has its VMI stopped by the kubelet, saying why, and started again by its VM", async () => {
    // Nothing in the tiny guest listens on port 80.
    const vm = withProbes("doomed", { livenessProbe: { tcpSocket: { port: 80 }, initialDelaySeconds: 10, periodSeconds: 2, failureThreshold: 2 } });
    await custom.createNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", body: vm });
    await expect.poll(async () => (await get("virtualmachineinstances", "doomed"))?.status?.phase, poll).toBe("Running");
    const first = (await get("virtualmachineinstances", "doomed"))?.metadata.uid;
    const [pod] = await launcherPods();
    expect(pod?.spec?.containers.find((c) => c.name === "compute")?.livenessProbe).toMatchObject({ httpGet: { path: "/probes/liveness", port: "ops" }, initialDelaySeconds: 10, periodSeconds: 2, failureThreshold: 2, timeoutSeconds: 2 });

    // The VM's events keep why its VMI failed: the launcher's word, through its pod's termination message.
    const vmEvents = async () =>
      (await core.listNamespacedEvent({ namespace, fieldSelector: "involvedObject.kind=VirtualMachine,involvedObject.name=doomed" })).items.map((e) => e.message ?? "").join("\n");
    await expect.poll(vmEvents, poll).toMatch(new RegExp(`deleting the virtual machine instance ${first ?? ""}, which failed: The virt-launcher pod ended \\(Failed\\): The liveness probe failed: tcp port 80: the guest (refused the connection|did not accept the connection in time)`));
    // The kubelet said so on the pod too.
    const podEvents = (await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${pod?.metadata?.name ?? ""}` })).items;
    expect(podEvents.map((e) => `${e.reason ?? ""}: ${e.message ?? ""}`).join("\n")).toMatch(/Unhealthy: Liveness probe failed/);
    // runStrategy Always: a new VMI runs, after the crash-loop back-off.
    await expect.poll(async () => {
      const vmi = await get("virtualmachineinstances", "doomed");
      return vmi?.metadata.uid !== first && vmi?.status?.phase === "Running";
    }, poll).toBe(true);
    await custom.deleteNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", name: "doomed" });
  });
});
