import { describe, expect, it } from "vitest";
import { withoutClusterRules } from "./cleanup.ts";

describe("withoutClusterRules", () => {
  it("drops the chains of kube-proxy, the kubelet and CNI, and the rules jumping to them, and keeps the rest", () => {
    const dump = [
      "*nat",
      ":PREROUTING ACCEPT [0:0]",
      ":POSTROUTING ACCEPT [0:0]",
      ":KUBE-SERVICES - [0:0]",
      ":CNI-1a2b - [0:0]",
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A POSTROUTING -s 198.18.0.5/32 -m comment --comment "name: kubevirt-ts" -j CNI-1a2b',
      "-A POSTROUTING -s 203.0.113.0/24 -j MASQUERADE",
      "-A CNI-1a2b -d 198.18.0.0/24 -j ACCEPT",
      "COMMIT",
    ].join("\n");
    expect(withoutClusterRules(dump)).toBe(
      [
        "*nat",
        ":PREROUTING ACCEPT [0:0]",
        ":POSTROUTING ACCEPT [0:0]",
        "-A POSTROUTING -s 203.0.113.0/24 -j MASQUERADE",
        "COMMIT",
      ].join("\n"),
    );
  });
});
