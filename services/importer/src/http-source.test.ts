import { describe, expect, it } from "vitest";
import { redirectDenyList } from "./http-source.ts";

describe("redirectDenyList", () => {
  const list = redirectDenyList("10.96.0.1");

  it(
    "denies loopback, cloud metadata, the private, shared and benchmarking ranges " +
      "(the local cluster's), and the API server",
    () => {
      for (const address of [
        "127.0.0.1",
        "169.254.169.254",
        "10.244.1.7",
        "172.20.0.3",
        "192.168.1.1",
        "100.64.0.10",
        "198.18.255.1",
        "198.19.0.1",
        "10.96.0.1",
      ])
        expect(list.check(address, "ipv4"), address).toBe(true);
      for (const address of ["::1", "fd00::1", "fe80::1"]) expect(list.check(address, "ipv6"), address).toBe(true);
    },
  );

  it("allows public addresses", () => {
    expect(list.check("151.101.2.132", "ipv4")).toBe(false);
    expect(list.check("198.20.0.1", "ipv4")).toBe(false);
    expect(list.check("2a04:4e42::644", "ipv6")).toBe(false);
  });

  it("denies an API server outside the private ranges, as KUBERNETES_SERVICE_HOST names it", () => {
    expect(redirectDenyList("203.0.113.10").check("203.0.113.10", "ipv4")).toBe(true);
  });
});
