import { describe, expect, it } from "vitest";
import {
  CLUSTER_POD_CIDR,
  KUBELET_DIR,
  LOCAL_PATH_DIR,
  MAX_NODES,
  NODE_IP,
  POD_CIDR,
  STATE_DIR,
  clusterNode,
  clusterNodes,
  machinePath,
} from "./config.ts";
import { cniConfig, kubeletConfig, kubeProxyConfig } from "./node-config.ts";

/** An IPv4 address as a number, and whether it is in a CIDR range. */
const toNumber = (ip: string) => ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);
function inCidr(ip: string, cidr: string): boolean {
  const [base = "", bits = "32"] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toNumber(ip) / size) === Math.floor(toNumber(base) / size);
}

describe("the local cluster's nodes", () => {
  it("keeps the first node as the machine itself, with the single-node cluster's address and pod range", () => {
    const first = clusterNode(1);
    expect([first.ip, first.podCidr, first.cgroupRoot, first.namespaces]).toEqual([NODE_IP, POD_CIDR, "/", undefined]);
  });

  it(
    "gives every node its own address, pod range inside the cluster's, socket, " + "state, cgroup root and namespaces",
    () => {
      const nodes = clusterNodes(MAX_NODES);
      for (const key of [
        "name",
        "ip",
        "podCidr",
        "containerdSocket",
        "stateDir",
        "cgroupRoot",
        "cniConfDir",
      ] as const) {
        expect(new Set(nodes.map((n) => n[key])).size, key).toBe(MAX_NODES);
      }
      for (const node of nodes) {
        expect(inCidr(node.podGateway, node.podCidr), node.name).toBe(true);
        expect(inCidr(node.podGateway, CLUSTER_POD_CIDR), node.name).toBe(true);
        expect(inCidr(node.ip, CLUSTER_POD_CIDR), node.name).toBe(false);
      }
      expect(nodes.slice(1).every((n) => n.namespaces !== undefined)).toBe(true);
    },
  );

  it(
    "finds a further node's own folders on the machine, and leaves the first " +
      "node's and the shared paths as they are",
    () => {
      const [first, second] = clusterNodes(2) as [ReturnType<typeof clusterNode>, ReturnType<typeof clusterNode>];
      expect(machinePath(first, `${LOCAL_PATH_DIR}/pvc-1`)).toBe(`${LOCAL_PATH_DIR}/pvc-1`);
      expect(machinePath(second, `${LOCAL_PATH_DIR}/pvc-1`)).toBe(
        `${second.stateDir}/own/${LOCAL_PATH_DIR.replaceAll("/", "_")}/pvc-1`,
      );
      expect(machinePath(second, KUBELET_DIR)).toBe(`${second.stateDir}/own/_var_lib_kubelet`);
      // A path that only starts like an own folder is not inside it.
      expect(machinePath(second, `${KUBELET_DIR}-other/x`)).toBe(`${KUBELET_DIR}-other/x`);
      expect(machinePath(second, `${STATE_DIR}/pki`)).toBe(`${STATE_DIR}/pki`);
    },
  );

  it("refuses a node the cluster cannot hold", () => {
    expect(() => clusterNode(0)).toThrow(/1 to 4/);
    expect(() => clusterNode(MAX_NODES + 1)).toThrow(/1 to 4/);
  });

  it("writes each node's own address, range, socket and cgroup root into its components' configuration", () => {
    const second = clusterNode(2);
    expect(cniConfig(second)).toContain(`"subnet": "${second.podCidr}"`);
    const kubelet = kubeletConfig(second, { caFile: "/ca", servingCert: "/cert", servingKey: "/key" });
    expect(kubelet).toContain(`address: ${second.ip}`);
    expect(kubelet).toContain(`cgroupRoot: ${second.cgroupRoot}`);
    expect(kubelet).toContain(`containerRuntimeEndpoint: unix://${second.containerdSocket}`);
    const proxy = kubeProxyConfig(second, "/kubeconfig");
    expect(proxy).toContain(`hostnameOverride: ${second.name}`);
    expect(proxy).toContain(`clusterCIDR: ${CLUSTER_POD_CIDR}`);
  });
});
