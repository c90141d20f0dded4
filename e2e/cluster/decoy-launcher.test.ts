import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { PAUSE_IMAGE } from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyVm } from "../manifests.ts";
import { core, custom, imageOf, suiteNamespace, undefinedIfNotFound } from "./cluster.ts";
import { openConsole } from "./console.ts";
import { podMetrics } from "./metrics.ts";

// Pods anyone allowed to create pods could plant: the launcher labels and a
// running VMI's uid, in another namespace and in the VMI's own, held by a
// finalizer, running the pause image on the VMI's node. kubevirt-ts must
// ignore them (a launcher pod belongs to a VMI only by namespace and
// controller ownerReference), report each once, never hand them the VMI's
// spec or console, and never let them block the VMI's deletion.

const { name: namespace, kubectl, get, launcherPods } = suiteNamespace("e2e-decoy");
const other = `${namespace}-other`;
const poll = { timeout: 180_000, interval: 1_000 };
const FINALIZER = "e2e.kubevirt-ts.io/decoy";
const planted: V1Pod[] = [];

function decoy(
  name: string,
  podNamespace: string,
  vmiUid: string,
  nodeName: string,
  ownerReferences?: V1OwnerReference[],
): V1Pod {
  return {
    metadata: {
      name,
      namespace: podNamespace,
      labels: { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmiUid },
      finalizers: [FINALIZER],
      ownerReferences,
    },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      securityContext: { runAsNonRoot: true, runAsUser: 65535, seccompProfile: { type: "RuntimeDefault" } },
      containers: [
        {
          name: "compute",
          image: PAUSE_IMAGE,
          imagePullPolicy: "Never",
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        },
      ],
    },
  };
}

async function plant(pod: V1Pod): Promise<V1Pod> {
  const created = await core.createNamespacedPod({ namespace: pod.metadata?.namespace ?? "", body: pod });
  planted.push(created);
  return created;
}

const readPod = (pod: V1Pod) =>
  core
    .readNamespacedPod({ name: pod.metadata?.name ?? "", namespace: pod.metadata?.namespace ?? "" })
    .catch(undefinedIfNotFound);

async function unownedEvents(pod: V1Pod): Promise<number> {
  const events = await core.listNamespacedEvent({
    namespace: pod.metadata?.namespace ?? "",
    fieldSelector: `involvedObject.uid=${pod.metadata?.uid ?? ""}`,
  });
  return events.items.filter((e) => e.reason === "UnownedLauncherPod").reduce((sum, e) => sum + (e.count ?? 1), 0);
}

async function componentPods(component: "virt-controller" | "virt-handler"): Promise<V1Pod[]> {
  return (
    await core.listNamespacedPod({ namespace: "kubevirt-ts", labelSelector: `app.kubernetes.io/name=${component}` })
  ).items.filter((p) => !p.metadata?.deletionTimestamp);
}

/**
 * The highest kubevirt_ts_unowned_launcher_pods among a component's pods, from their /metrics (read with the scraper's
 * token).
 */
async function unownedGauge(component: "virt-controller" | "virt-handler"): Promise<number> {
  const values = await Promise.all(
    (await componentPods(component)).map(async (pod) => {
      const text = await podMetrics(pod, component);
      return Number(/^kubevirt_ts_unowned_launcher_pods (\d+)/m.exec(text)?.[1] ?? Number.NaN);
    }),
  );
  return Math.max(...values);
}

beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: other } } });
});

afterAll(async () => {
  for (const pod of planted) {
    const { name = "", namespace: podNamespace = "" } = pod.metadata ?? {};
    await kubectl(
      "patch",
      "pod",
      name,
      "-n",
      podNamespace,
      "--type=merge",
      "-p",
      '{"metadata":{"finalizers":null}}',
    ).catch(() => undefined);
    await core.deleteNamespacedPod({ name, namespace: podNamespace }).catch(undefinedIfNotFound);
  }
  await core.deleteNamespace({ name: other });
});

describe("decoy launcher pods", () => {
  let real: V1Pod | undefined;
  let decoys: V1Pod[] = [];

  it("are ignored: the VMI runs on its own pod, and each decoy gets one UnownedLauncherPod event", async () => {
    await custom.createNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      body: tinyVm("tiny", imageOf("tiny-guest"), namespace),
    });
    await expect.poll(async () => (await get("virtualmachineinstances", "tiny"))?.status?.phase, poll).toBe("Running");
    const vmi = await get("virtualmachineinstances", "tiny");
    const uid = vmi?.metadata.uid ?? "";
    [real] = await launcherPods();
    expect(real?.metadata?.ownerReferences?.find((r) => r.controller)?.uid).toBe(uid);

    const node = vmi?.status?.nodeName as string;
    decoys = [
      await plant(decoy("decoy-labels", other, uid, node)),
      await plant(decoy("decoy-labels", namespace, uid, node)),
      // A copy of the real pod's controller reference, in a namespace where that VMI is not.
      await plant(decoy("decoy-forged-owner", other, uid, node, real?.metadata?.ownerReferences)),
    ];
    // Running on the VMI's node, where its handler sees them.
    for (const pod of decoys.slice(0, 2))
      await expect.poll(async () => (await readPod(pod))?.status?.phase, poll).toBe("Running");
    for (const pod of decoys) await expect.poll(() => unownedEvents(pod), poll).toBe(1);
    await expect.poll(() => unownedGauge("virt-controller"), poll).toBeGreaterThanOrEqual(3);
    await expect.poll(() => unownedGauge("virt-handler"), poll).toBeGreaterThanOrEqual(2);

    // Some handler polls and a controller resync later, still one event each, and the VMI on its own pod alone.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    for (const pod of decoys) expect(await unownedEvents(pod)).toBe(1);
    const after = await get("virtualmachineinstances", "tiny");
    expect(after?.status?.phase).toBe("Running");
    expect(Object.keys(after?.status?.activePods as Record<string, string>)).toEqual([real?.metadata?.uid]);
    expect((after?.status?.interfaces as { ipAddress: string }[])[0]?.ipAddress).toBe(real?.status?.podIP);
    expect((await launcherPods()).map((p) => p.metadata?.uid).sort()).toEqual(
      [real?.metadata?.uid, decoys[1]?.metadata?.uid].sort(),
    );
    // The handler never tried a decoy's sockets: its log names none of them.
    for (const handler of await componentPods("virt-handler")) {
      const log = await kubectl("logs", "-n", "kubevirt-ts", handler.metadata?.name ?? "");
      for (const pod of decoys) expect(log).not.toContain(pod.metadata?.uid ?? "");
    }
  });

  it("never receive the console: a session through the API reaches the real guest", async () => {
    const { ws, received } = await openConsole(namespace, "tiny", "console");
    ws.send(Buffer.from("echo decoy-check=$((6*9))\n"));
    await expect.poll(() => received().toString(), poll).toContain("decoy-check=54");
    ws.close();
  });

  it("never block deletion: the VM, its VMI and its pod go while the decoys stay", async () => {
    await kubectl("delete", "vm", "tiny", "-n", namespace, "--wait=true", "--timeout=150s");
    expect(await get("virtualmachines", "tiny")).toBeUndefined();
    expect(await get("virtualmachineinstances", "tiny")).toBeUndefined();
    await expect
      .poll(async () => (await launcherPods()).map((p) => p.metadata?.uid), poll)
      .toEqual([decoys[1]?.metadata?.uid]);
    for (const pod of decoys.slice(0, 2)) expect((await readPod(pod))?.metadata?.deletionTimestamp).toBeUndefined();
  });
});
