import { ApiException } from "@kubernetes/client-node";
import { parseQuantity } from "@kubevirt-ts/kubevirt-api";
import { custom, imageOf, installedImages } from "../cluster/cluster.ts";
import { tinyVm } from "../manifests.ts";

// What the benchmark runs: the minimal VMI (the blank containerDisk of
// examples/vm-blank-disk.yaml, 64Mi of guest memory, no cloud-init; its
// firmware finds nothing to boot, but the domain runs), as KubeVirt's
// performance tests use a minimal VMI.

export const MINIMAL_GUEST_MEMORY = 64 * 2 ** 20;

export function blankDiskImage(): string {
  const image = installedImages.find((i) => i.reference.startsWith("kubevirt-ts.local/blank-disk:"))?.reference;
  if (!image) throw new Error("no blank-disk image in .local/images.json; run make cluster-sync (or make up) first");
  return image;
}

export function minimalVmi(name: string, namespace: string, image: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name, namespace, labels: { "kubevirt-ts.io/bench": "true" } },
    spec: {
      domain: { memory: { guest: "64Mi" }, devices: { disks: [{ name: "containerdisk", disk: { bus: "virtio" } }] } },
      volumes: [{ name: "containerdisk", containerDisk: { image } }],
      terminationGracePeriodSeconds: 5,
      ...extra,
    },
  };
}

/** The e2e suites' tiny guest (manifests.ts: a kernel and an initrd booted to a shell) as a VMI of its own. */
export function tinyVmi(name: string, namespace: string) {
  const { spec } = tinyVm(name, imageOf("tiny-guest"), namespace).spec.template;
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name, namespace, labels: { "kubevirt-ts.io/bench": "true" } },
    spec,
  };
}

export const TINY_GUEST_MEMORY = parseQuantity(tinyVmi("tiny", "default").spec.domain.memory.guest) ?? 0;

/**
 * Creates a VMI, trying again (at most three times, a second apart) when the API server answers 429 or 5xx: under the
 * load of thousands of creates a webhook call may time out, and one such answer must not end a run of 5,000.
 */
export async function createVmi(namespace: string, body: unknown): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachineinstances",
        body,
      });
      return;
    } catch (error) {
      const code = error instanceof ApiException ? error.code : 0;
      if (attempt >= 3 || !(code === 429 || code >= 500)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

export const createVm = (namespace: string, body: unknown) =>
  custom.createNamespacedCustomObject({
    group: "kubevirt.io",
    version: "v1",
    namespace,
    plural: "virtualmachines",
    body,
  });

/** Runs the task for each item with at most `limit` at a time. */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await task(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
