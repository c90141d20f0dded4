import { defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import {
  type MasqueradePlan,
  guestAddresses,
  guestNetworkOf,
  macOf,
  networkSetupScript,
  podNetworkPlan,
  podNetworkRules,
} from "./pod-network.ts";

const spec = (iface: Record<string, unknown>, networks = [{ name: "default", pod: {} }]) =>
  defaultVmiSpec({ domain: { devices: { interfaces: [{ name: "default", masquerade: {}, ...iface }] } }, networks });

/** The masquerade's plan of a spec, which has one. */
function masquerade(s: ReturnType<typeof spec>): MasqueradePlan {
  const plan = podNetworkPlan(s);
  if (plan?.binding !== "masquerade") throw new Error(`expected a masquerade, got ${JSON.stringify(plan)}`);
  return plan;
}

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
    const plan = masquerade(spec({}));
    expect(plan).toEqual({
      binding: "masquerade",
      guestNetwork: { address: "198.19.254.0", prefix: 24 },
      ports: undefined,
    });
    const rules = podNetworkRules(plan);
    expect(rules).toContain('iifname "eth0" tcp dport { 9102 } return');
    expect(rules).toContain('iifname "eth0" meta l4proto { tcp, udp } dnat to 198.19.254.2');
    expect(rules).toContain('iifname "eth0" icmp type echo-request dnat to 198.19.254.2');
    expect(rules).toContain('oifname "eth0" ip saddr 198.19.254.2 masquerade');
    expect(rules).toContain('udp dport 67 iifname != "k6t-eth0" drop');
    // The rule of the launcher's own port comes before the one that takes every port.
    expect(rules.indexOf("9102")).toBeLessThan(rules.indexOf("meta l4proto"));
  });

  it("forwards the declared ports alone when some are", () => {
    const rules = podNetworkRules(
      masquerade(
        spec({ ports: [{ port: 22 }, { name: "http", port: 80 }, { port: 53, protocol: "UDP" }, { port: 22 }] }),
      ),
    );
    expect(rules).toContain('iifname "eth0" tcp dport { 22, 80 } dnat to 198.19.254.2');
    expect(rules).toContain('iifname "eth0" udp dport { 53 } dnat to 198.19.254.2');
    expect(rules).not.toContain("meta l4proto");
  });

  it("has nothing to set up for a VMI without an interface on the pod network", () => {
    expect(podNetworkPlan(defaultVmiSpec({ domain: { devices: { autoattachPodInterface: false } } }))).toBeUndefined();
  });

  it("makes the bridge, the launcher's tap and the rules in the pod's namespace", () => {
    const script = networkSetupScript(masquerade(spec({})));
    expect(script).toContain("ip link add k6t-eth0 address 02:00:00:00:00:00 type bridge");
    expect(script).toContain("ip address add 198.19.254.1/24 dev k6t-eth0");
    expect(script).toContain("ip tuntap add dev tap0 mode tap user 107 group 107");
    expect(script).toContain("printf '%s' \"$KUBEVIRT_TS_NETWORK_RULES\" | nft -f -");
  });
});

describe("the pod network's bridge", () => {
  const bridged = (iface: Record<string, unknown> = {}) => spec({ masquerade: undefined, bridge: {}, ...iface });

  it("bridges the pod's interface, whose address the guest takes", () => {
    const plan = podNetworkPlan(bridged());
    expect(plan).toEqual({ binding: "bridge", mac: undefined });
    const script = networkSetupScript(plan ?? { binding: "bridge", mac: undefined });
    // The pod's address, gateway and MAC are noted for the launcher before the address leaves the interface.
    expect(script).toContain('> "$KUBEVIRT_TS_NETWORK_NOTES/pod-interface.json"');
    expect(script.indexOf("pod-interface.json")).toBeLessThan(script.indexOf("ip address flush dev eth0"));
    expect(script).toContain("guest_mac=$pod_mac");
    expect(script).toContain("ip link set eth0 master k6t-eth0 up");
    expect(script).toContain('ip link set tap0 mtu "$mtu" master k6t-eth0 up');
    expect(script).toContain("ip address add 169.254.75.10/32 dev k6t-eth0");
    expect(script).toContain('ip neigh replace "${address%/*}" lladdr "$guest_mac" dev k6t-eth0 nud permanent');
    const rules = podNetworkRules(plan ?? { binding: "bridge", mac: undefined });
    // DHCP never crosses the bridge; the guest's answers to the launcher stay in the pod.
    expect(rules).toContain('iifname "eth0" udp dport { 67, 68 } drop');
    expect(rules).toContain('oifname "eth0" udp dport { 67, 68 } drop');
    expect(rules).toContain('iifname "tap0" ip daddr 169.254.75.10 ether daddr set $bridge_mac meta pkttype set host');
    expect(rules).not.toContain("dnat");
  });

  it("gives the guest the interface's own MAC when it names one, in libvirt's spelling", () => {
    const plan = podNetworkPlan(bridged({ macAddress: "DE-AD-00-00-BE-EF" }));
    expect(plan).toEqual({ binding: "bridge", mac: "de:ad:00:00:be:ef" });
    expect(networkSetupScript(plan ?? { binding: "bridge", mac: undefined })).toContain("guest_mac=de:ad:00:00:be:ef");
    expect(() => macOf("de:ad:00:00:be:ef; reboot")).toThrow("not a MAC address");
  });
});
