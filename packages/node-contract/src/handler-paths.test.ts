import {
  DOMAIN_ACTION_SUBRESOURCE,
  VMI_DOMAIN_ACTIONS,
  domainActionOf,
  parsePortForward,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { handlerPath } from "./handler-routes.ts";

describe("port forwards", () => {
  it("name a port from 1 to 65535 and tcp, the protocol a path without one means", () => {
    expect(parsePortForward("22", undefined)).toEqual({ port: 22, protocol: "tcp" });
    expect(parsePortForward("65535", "TCP")).toEqual({ port: 65535, protocol: "tcp" });
    expect(parsePortForward("65536", "tcp")).toBe("port 65536 is not a port number: give one from 1 to 65535");
    expect(parsePortForward("2e3", "tcp")).toBe("port 2e3 is not a port number: give one from 1 to 65535");
    expect(parsePortForward("53", "udp")).toBe("protocol udp is not forwarded yet: only tcp is");
    expect(parsePortForward("22", "sctp")).toBe(
      "protocol sctp is not known: give tcp (or udp, which is not forwarded yet)",
    );
    expect(handlerPath("portForward", { namespace: "ns", name: "web", port: "22", protocol: "tcp" })).toBe(
      "/v1/namespaces/ns/virtualmachineinstances/web/portforward/22/tcp",
    );
  });
});

describe("domain actions on the wire", () => {
  it("keep KubeVirt's subresource names in the handler's paths, and come back by them", () => {
    expect(
      handlerPath("domainAction", { namespace: "ns", name: "web", action: DOMAIN_ACTION_SUBRESOURCE.softReboot }),
    ).toBe("/v1/namespaces/ns/virtualmachineinstances/web/softreboot");
    expect(handlerPath("console", { namespace: "ns", name: "web" })).toBe(
      "/v1/namespaces/ns/virtualmachineinstances/web/console",
    );
    expect(VMI_DOMAIN_ACTIONS.map((action) => domainActionOf(DOMAIN_ACTION_SUBRESOURCE[action]))).toEqual(
      VMI_DOMAIN_ACTIONS,
    );
    expect(domainActionOf("softReboot")).toBeUndefined();
  });
});
