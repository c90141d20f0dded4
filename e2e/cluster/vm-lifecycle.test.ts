import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { REPO_ROOT, ensureBinaries } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH, NODE_NAME } from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// A KubeVirt VM manifest applied with kubectl, on the real node: the
// controller gives it a VMI and a launcher pod that the scheduler places and
// the kubelet runs; stopping and deleting the VM clean up after it.

const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(KUBECONFIG_PATH);
const core = kubeConfig.makeApiClient(CoreV1Api);
const custom = kubeConfig.makeApiClient(CustomObjectsApi);
const namespace = `e2e-vm-${Date.now().toString(36)}`;
const poll = { timeout: 120_000, interval: 500 };
let kubectl: (...args: string[]) => Promise<string>;

type Obj = { metadata: { uid?: string }; status?: Record<string, unknown> } | undefined;
const get = (plural: string, name: string): Promise<Obj> =>
  custom.getNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace, plural, name }).then((o) => o as Obj, () => undefined);
const launcherPods = async () => (await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" })).items;

beforeAll(async () => {
  const binDir = await ensureBinaries(["kubectl"]);
  kubectl = async (...args) => (await promisify(execFile)(join(binDir, "kubectl"), [`--kubeconfig=${KUBECONFIG_PATH}`, ...args])).stdout;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
});

afterAll(async () => {
  await core.deleteNamespace({ name: namespace });
});

describe("a KubeVirt VM applied with kubectl", () => {
  it("gets a VMI and a launcher pod scheduled on the node; stopping removes both; deleting leaves nothing", async () => {
    await kubectl("apply", "-n", namespace, "-f", join(REPO_ROOT, "examples/vm-blank-disk.yaml"));

    await expect.poll(async () => (await get("virtualmachineinstances", "testvm"))?.status?.phase, poll).toBe("Scheduled");
    const vmi = await get("virtualmachineinstances", "testvm");
    expect(vmi?.status?.nodeName).toBe(NODE_NAME);
    const timestamps = (vmi?.status?.phaseTransitionTimestamps as { phase: string }[] | undefined)?.map((t) => t.phase);
    expect(timestamps).toEqual(["Pending", "Scheduling", "Scheduled"]);
    const pods = await launcherPods();
    expect(pods).toHaveLength(1);
    expect(pods[0]?.spec?.nodeName).toBe(NODE_NAME);
    expect(pods[0]?.status?.phase).toBe("Running");
    expect(pods[0]?.metadata?.labels?.["kubevirt.io/created-by"]).toBe(vmi?.metadata.uid);
    // The containerDisk was copied out of its image by an init container that ran to completion.
    const copy = pods[0]?.status?.initContainerStatuses?.find((c) => c.name === "volume-containerdisk");
    expect(copy?.state?.terminated?.exitCode).toBe(0);
    // The launcher runs libvirt as its own unprivileged user and waits for the handler on its socket.
    const launcherLog = await core.readNamespacedPodLog({ name: pods[0]?.metadata?.name ?? "", namespace, container: "compute" });
    expect(launcherLog).toContain('"msg":"libvirtd is up"');
    expect(launcherLog).toContain('"msg":"serving the launcher protocol"');
    expect(await kubectl("get", "vm", "testvm", "-n", namespace, "-o", "jsonpath={.status.printableStatus}")).toBe("Starting");

    await kubectl("patch", "vm", "testvm", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
    await expect.poll(() => get("virtualmachineinstances", "testvm"), poll).toBeUndefined();
    await expect.poll(async () => (await launcherPods()).length, poll).toBe(0);
    await expect.poll(async () => (await get("virtualmachines", "testvm"))?.status?.printableStatus, poll).toBe("Stopped");

    await kubectl("patch", "vm", "testvm", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Always"}}');
    await expect.poll(async () => (await launcherPods()).length, poll).toBe(1);
    await kubectl("delete", "vm", "testvm", "-n", namespace, "--wait=true", "--timeout=120s");
    expect(await get("virtualmachines", "testvm")).toBeUndefined();
    expect(await get("virtualmachineinstances", "testvm")).toBeUndefined();
    await expect.poll(async () => (await launcherPods()).length, poll).toBe(0);
  });

  it("is counted in the leading controller's REST metrics, by verb and resource", async () => {
    const controllers = (await core.listNamespacedPod({ namespace: "kubevirt-ts", labelSelector: "app.kubernetes.io/name=virt-controller" })).items;
    expect(controllers).toHaveLength(2);
    const metrics = await Promise.all(
      controllers.map((pod) => kubectl("get", "--raw", `/api/v1/namespaces/kubevirt-ts/pods/${pod.metadata?.name ?? ""}:9100/proxy/metrics`)),
    );
    const leader = metrics.find((text) => /kubevirt_rest_client_requests_total\{[^}]*verb="create"[^}]*resource="virtualmachineinstances"/.test(text));
    expect(leader, "one controller created the VMI").toBeDefined();
    expect(leader).toMatch(/kubevirt_rest_client_requests_total\{verb="update",method="PUT",resource="virtualmachineinstances\/status",code="200"\} \d+/);
    expect(leader).toMatch(/workqueue_adds_total\{name="virtualmachineinstances"\} \d+/);
  });
});
