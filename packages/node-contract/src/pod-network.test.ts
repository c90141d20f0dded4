import { defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { guestAddresses, guestNetworkOf, masqueradePlan, masqueradeRules, networkSetupScript } from "./pod-network.ts";

const spec = (iface: Record<string, unknown>, networks = [{ name: "default", pod: {} }]) =>
  defaultVmiSpec({ domain: { devices: { interfaces: [{ name: "default", masquerade: {}, ...iface }] } }, networks });

describe("the pod network's masquerade", () => {
  it("puts the gateway first and the guest second in the guest network, as KubeVirt", () => {
    expect(guestAddresses({ address: "10.0.2.0", prefix: 24 })).toEqual({
      network: { address: "10.0.2.0", prefix: 24 },
      gateway: "10.0.2.1",
      guest: "10.0.2.2",
      broadcast: "10.0.2.255",
    });
    expect(() => guestAddresses({ address: "198.18.0.0", prefix: 31 })).toThrow("no room");
  });

  it("takes the pod network's vmNetworkCIDR, as its network's address", () => {
    expect(guestNetworkOf(spec({}, [{ name: "default", pod: { vmNetworkCIDR: "198.18.77.9/26" } }]))).toEqual({
      address: "198.18.77.0",
      prefix: 26,
    });
    expect(guestNetworkOf(spec({}))).toEqual({ address: "198.19.254.0", prefix: 24 });
  });

  it("forwards every TCP and UDP port but the launcher's own when none is declared, and ICMP echo", () => {
    const plan = masqueradePlan(spec({}));
    expect(plan).toEqual({ guestNetwork: { address: "198.19.254.0", prefix: 24 }, ports: undefined });
    const rules = masqueradeRules(plan ?? { guestNetwork: { address: "", prefix: 0 }, ports: undefined });
    expect(rules).toContain('iifname "eth0" tcp dport { 9102 } return');
    expect(rules).toContain('iifname "eth0" meta l4proto { tcp, udp } dnat to 198.19.254.2');
    expect(rules).toContain('iifname "eth0" icmp type echo-request dnat to 198.19.254.2');
    expect(rules).toContain('oifname "eth0" ip saddr 198.19.254.2 masquerade');
    expect(rules).toContain('udp dport 67 iifname != "k6t-eth0" drop');
    // The rule of the launcher's own port comes before the one that takes every port.
    expect(rules.indexOf("9102")).toBeLessThan(rules.indexOf("meta l4proto"));
  });

  it("forwards the declared ports alone when some are", () => {
    const plan = masqueradePlan(
      spec({ ports: [{ port: 22 }, { name: "http", port: 80 }, { port: 53, protocol: "UDP" }, { port: 22 }] }),
    );
    const rules = masqueradeRules(plan ?? { guestNetwork: { address: "", prefix: 0 }, ports: undefined });
    expect(rules).toContain('iifname "eth0" tcp dport { 22, 80 } dnat to 198.19.254.2');
    expect(rules).toContain('iifname "eth0" udp dport { 53 } dnat to 198.19.254.2');
    expect(rules).not.toContain("meta l4proto");
  });

  it("has nothing to set up for a VMI without an interface on the pod network", () => {
    expect(masqueradePlan(defaultVmiSpec({ domain: { devices: { autoattachPodInterface: false } } }))).toBeUndefined();
  });

  it("makes the bridge, the launcher's tap and the rules in the pod's namespace", () => {
    const script = networkSetupScript({ address: "198.19.254.0", prefix: 24 });
    expect(script).toContain("ip link add k6t-eth0 address 02:00:00:00:00:00 type bridge");
    expect(script).toContain("ip address add 198.19.254.1/24 dev k6t-eth0");
    expect(script).toContain("ip tuntap add dev tap0 mode tap user 107 group 107");
    expect(script).toContain("printf '%s' \"$KUBEVIRT_TS_NETWORK_RULES\" | nft -f -");
  });
});
