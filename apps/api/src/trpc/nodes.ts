import { ApiError, type KubeClient, type Node, type Pod, resources } from "@kubevirt-ts/kube";
import { type VirtualMachineInstance, kubevirtResources, parseQuantity } from "@kubevirt-ts/kubevirt-api";

// The node view's facts, read as the user: each node's readiness, capacity,
// what it can give to pods (allocatable) and what the pods on it ask for
// (requests, as the scheduler counts them), and the VMs running there. What
// the user may not list (pods or VMIs across namespaces) is left out and
// said so, not guessed.

export interface NodeFacts {
  name: string;
  ready: boolean;
  address: string;
  schedulable: boolean;
  roles: string[];
  /** CPU in millicores, memory in bytes. */
  capacity: { cpu: number; memory: number };
  allocatable: { cpu: number; memory: number };
  /** What the pods on the node request; undefined when the user may not list pods in every namespace. */
  requested: { cpu: number; memory: number; pods: number } | undefined;
  vms: { namespace: string; name: string; phase: string }[];
}

const millicores = (q: string | undefined): number => Math.round((parseQuantity(q ?? "0") ?? 0) * 1000);
const bytes = (q: string | undefined): number => parseQuantity(q ?? "0") ?? 0;

/**
 * A pod's requests as the scheduler counts them: its containers' and sidecars' sum (a sidecar is an init container
 * that keeps running), or an init container's with the sidecars started before it if more, plus its overhead.
 */
export function podRequests(pod: Pod): { cpu: number; memory: number } {
  const sum = (containers: { resources?: { requests?: Record<string, string> } }[] | undefined) =>
    (containers ?? []).reduce(
      (acc, c) => ({
        cpu: acc.cpu + millicores(c.resources?.requests?.cpu),
        memory: acc.memory + bytes(c.resources?.requests?.memory),
      }),
      { cpu: 0, memory: 0 },
    );
  const sidecars: NonNullable<NonNullable<Pod["spec"]>["initContainers"]> = [];
  const init: { cpu: number; memory: number }[] = [];
  for (const c of pod.spec?.initContainers ?? []) {
    if (c.restartPolicy === "Always") sidecars.push(c);
    else init.push(sum([c, ...sidecars]));
  }
  const main = sum([...(pod.spec?.containers ?? []), ...sidecars]);
  const overhead = pod.spec?.overhead;
  return {
    cpu: Math.max(main.cpu, ...init.map((i) => i.cpu)) + millicores(overhead?.cpu),
    memory: Math.max(main.memory, ...init.map((i) => i.memory)) + bytes(overhead?.memory),
  };
}

/** Lists across namespaces, or undefined when the user may not (403): only a refusal means "not shown". */
async function listEverywhere<T extends Pod | VirtualMachineInstance>(
  client: KubeClient,
  type: Parameters<KubeClient["list"]>[0],
  options: Parameters<KubeClient["list"]>[2] = {},
): Promise<T[] | undefined> {
  try {
    return (await client.list<T>(type, undefined, options)).items;
  } catch (error) {
    if (error instanceof ApiError && error.code === 403) return undefined;
    throw error;
  }
}

export async function nodeFacts(
  client: KubeClient,
  namespace: string,
): Promise<{ nodes: NodeFacts[]; vmsOf: string | null }> {
  const [nodes, pods, everywhere] = await Promise.all([
    client.list<Node>(resources.nodes),
    listEverywhere<Pod>(client, resources.pods, { fieldSelector: "status.phase!=Succeeded,status.phase!=Failed" }),
    listEverywhere<VirtualMachineInstance>(client, kubevirtResources.virtualMachineInstances),
  ]);
  // A user who may not list VMIs everywhere sees those of the namespace they look at.
  const vmis =
    everywhere ??
    (await client.list<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace)).items;
  return {
    // null: the VMs of every namespace; else the one namespace whose VMs are shown.
    vmsOf: everywhere ? null : namespace,
    nodes: nodes.items
      .map((n) => {
        const name = n.metadata.name ?? "";
        const onNode = pods?.filter((p) => p.spec?.nodeName === name);
        const requested = onNode
          ?.map(podRequests)
          .reduce<NonNullable<NodeFacts["requested"]>>(
            (acc, r) => ({ cpu: acc.cpu + r.cpu, memory: acc.memory + r.memory, pods: acc.pods + 1 }),
            { cpu: 0, memory: 0, pods: 0 },
          );
        return {
          name,
          ready: n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
          address: n.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "",
          schedulable: n.spec?.unschedulable !== true,
          roles: Object.keys(n.metadata.labels ?? {})
            .filter((l) => l.startsWith("node-role.kubernetes.io/"))
            .map((l) => l.slice("node-role.kubernetes.io/".length)),
          capacity: { cpu: millicores(n.status?.capacity?.cpu), memory: bytes(n.status?.capacity?.memory) },
          allocatable: { cpu: millicores(n.status?.allocatable?.cpu), memory: bytes(n.status?.allocatable?.memory) },
          requested,
          vms: vmis
            .filter((v) => v.status?.nodeName === name)
            .map((v) => ({
              namespace: v.metadata.namespace ?? "",
              name: v.metadata.name ?? "",
              phase: v.status?.phase ?? "",
            }))
            .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}
