import { describe, expect, test } from "vitest";
import { markRefusal, nodeDraining } from "./eviction-webhook.ts";

// When an eviction review may mark a VMI for evacuation: always over the API
// server's verified certificate; from anyone else only off a node being drained.

describe("nodeDraining", () => {
  test("a cordoned node is being drained", () => {
    expect(nodeDraining({ spec: { unschedulable: true } })).toBe(true);
  });

  test(
    "a node tainted by a tool that empties nodes is being drained (autoscalers, " +
      "KubeVirt's drain key, the node controller)",
    () => {
      expect(
        nodeDraining({ spec: { taints: [{ key: "ToBeDeletedByClusterAutoscaler", effect: "NoSchedule" }] } }),
      ).toBe(true);
      expect(nodeDraining({ spec: { taints: [{ key: "kubevirt.io/drain", effect: "NoSchedule" }] } })).toBe(true);
      expect(nodeDraining({ spec: { taints: [{ key: "node.kubernetes.io/unreachable", effect: "NoExecute" }] } })).toBe(
        true,
      );
    },
  );

  test("a node's standing NoSchedule or NoExecute taint (a dedicated node, a GPU node) is no drain", () => {
    expect(nodeDraining({ spec: { taints: [{ key: "dedicated", value: "kubevirt", effect: "NoSchedule" }] } })).toBe(
      false,
    );
    expect(nodeDraining({ spec: { taints: [{ key: "nvidia.com/gpu", effect: "NoExecute" }] } })).toBe(false);
  });

  test("a schedulable node, one only PreferNoSchedule, and a node that does not exist are not", () => {
    expect(nodeDraining({ spec: {} })).toBe(false);
    expect(
      nodeDraining({ spec: { unschedulable: false, taints: [{ key: "busy", effect: "PreferNoSchedule" }] } }),
    ).toBe(false);
    expect(nodeDraining(undefined)).toBe(false);
  });
});

describe("markRefusal", () => {
  test("the API server, verified, marks whatever the node", () => {
    expect(markRefusal("verified", "node-a", { spec: {} })).toBeUndefined();
    expect(markRefusal("verified", "node-a", undefined)).toBeUndefined();
  });

  test("an unverified caller marks only off a node being drained", () => {
    expect(markRefusal("unverified", "node-a", { spec: { unschedulable: true } })).toBeUndefined();
  });

  test("an unverified caller off a schedulable node is told why nothing was marked and what would", () => {
    const why = markRefusal("unverified", "node-a", { spec: {} });
    expect(why).toContain("node node-a is not being drained");
    expect(why).toContain("webhooks.clientCA");
    expect(markRefusal("unverified", "gone", undefined)).toContain("node gone is not being drained");
  });
});
