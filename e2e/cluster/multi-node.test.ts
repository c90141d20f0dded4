import { describe, expect, it } from "vitest";
import { clusterNode } from "@kubevirt-ts/local-cluster";
import { core, createVm, custom, imageOf, nodeNames, suiteNamespace } from "./cluster.ts";
import { inGuest } from "./console.ts";
import { runPod } from "./pods.ts";
import { tinyVm } from "../manifests.ts";

// More than one node (make test brings the cluster up with NODES=2): each a
// kubelet, containerd and kube-proxy of its own, in network and mount
// namespaces of its own, with its own pod range; pods reach each other and
// Services across nodes, and a VM runs on a node that is not the machine's own.

const { name: namespace } = suiteNamespace("e2e-nodes");
const poll = { timeout: 180_000, interval: 1_000 };
const nodeImage = imageOf("virt-controller");
const [first = "", second = ""] = nodeNames;

/** Whether an address is in a pod range: "198.18.1.0/24" holds 198.18.1.x. */
const inRange = (ip: string | undefined, cidr: string) => (ip ?? "").startsWith(cidr.replace(/0\/24$/, ""));

/**
 * A pod on the node serving its name over HTTP on port 8080, behind a Service of the same name; resolves with its
 * address once Ready.
 */
async function server(name: string, nodeName: string): Promise<string> {
  const script = `require("node:http").createServer((q, r) => r.end("${name} on " + process.env.NODE)).listen(8080)`;
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { app: name } },
      spec: {
        nodeName,
        automountServiceAccountToken: false,
        containers: [
          {
            name: "serve",
            image: nodeImage,
            imagePullPolicy: "IfNotPresent",
            command: ["node", "-e", script],
            env: [{ name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    },
  });
  await core.createNamespacedService({
    namespace,
    body: { metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }] } },
  });
  await expect
    .poll(
      async () =>
        (await core.readNamespacedPod({ name, namespace })).status?.conditions?.find((c) => c.type === "Ready")?.status,
      poll,
    )
    .toBe("True");
  return (await core.readNamespacedPod({ name, namespace })).status?.podIP ?? "";
}

/** What a pod on `from` reads from each URL. */
function fetchFrom(from: string, urls: string[]): Promise<string> {
  // Each URL asked until it answers, for 60 s at most: kube-proxy programs a new Service's rules a moment after its
  // endpoints are ready.
  const script =
    `(async () => { for (const url of ${JSON.stringify(urls)}) { const until = Date.now() + 60000; ` +
    `for (;;) { try { console.log(url, "->", await (await fetch(url, { signal: ` +
    "AbortSignal.timeout(5000) })).text()); break; } catch (e) { if (Date.now() > until) throw e; " +
    "await new Promise((r) => setTimeout(r, 1000)); } } } })()";
  return runPod(core, { namespace, image: nodeImage, command: ["node", "-e", script], nodeName: from });
}

describe("a cluster of two nodes", () => {
  it("has two Ready nodes, each with its own address", async () => {
    expect(
      nodeNames.length,
      "the multi-node suite needs a cluster of two nodes or more: make cluster-up NODES=2",
    ).toBeGreaterThanOrEqual(2);
    const nodes = (await core.listNode()).items;
    const addresses = nodes.map((n) => n.status?.addresses?.find((a) => a.type === "InternalIP")?.address);
    expect(new Set(addresses).size).toBe(nodes.length);
    expect(addresses).toContain(clusterNode(2).ip);
  });

  it(
    "gives each node's pods addresses from its own range, and pods reach pods " +
      "and Services across the nodes both ways",
    async () => {
      const [onFirst, onSecond] = await Promise.all([server("one", first), server("two", second)]);
      expect(inRange(onFirst, clusterNode(1).podCidr), onFirst).toBe(true);
      expect(inRange(onSecond, clusterNode(2).podCidr), onSecond).toBe(true);

      const fromSecond = await fetchFrom(second, [
        `http://${onFirst}:8080/`,
        `http://one.${namespace}.svc.cluster.local/`,
      ]);
      expect(fromSecond).toContain(`http://${onFirst}:8080/ -> one on ${first}`);
      expect(fromSecond).toContain(`http://one.${namespace}.svc.cluster.local/ -> one on ${first}`);
      const fromFirst = await fetchFrom(first, [
        `http://${onSecond}:8080/`,
        `http://two.${namespace}.svc.cluster.local/`,
      ]);
      expect(fromFirst).toContain(`http://${onSecond}:8080/ -> two on ${second}`);
      expect(fromFirst).toContain(`http://two.${namespace}.svc.cluster.local/ -> two on ${second}`);
    },
  );

  it(
    "runs a VM on the second node, under that node's handler: its guest answers on the " +
      "serial console and resolves Service names",
    async () => {
      const vm = tinyVm("far", imageOf("tiny-guest"), namespace);
      Object.assign(vm.spec.template.spec, { nodeSelector: { "kubernetes.io/hostname": second } });
      await createVm(namespace, vm);
      const vmi = async () =>
        (await custom.getNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachineinstances",
          name: "far",
        })) as { status?: { phase?: string; nodeName?: string } };
      await expect.poll(async () => (await vmi()).status?.phase, poll).toBe("Running");
      expect((await vmi()).status?.nodeName).toBe(second);
      const pods = (await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" })).items;
      expect(pods.map((p) => p.spec?.nodeName)).toEqual([second]);
      expect(inRange(pods[0]?.status?.podIP, clusterNode(2).podCidr)).toBe(true);
      await inGuest(
        namespace,
        "far",
        "for i in $(seq 60); do [ -s /etc/resolv.conf ] && break; sleep 1; done; nslookup one.".concat(
          namespace,
          ".svc.cluster.local",
        ),
        "Address: 198.19.",
      );
    },
  );
});
