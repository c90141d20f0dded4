import { DOMAIN_ACTION_SUBRESOURCE, VMI_DOMAIN_ACTIONS, domainActionOf, parsePortForward, portForwardSegment } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { consoleServerPath } from "./handler-paths.ts";

describe("port forwards", () => {
  it("name a port from 1 to 65535 and tcp, the protocol a path without one means", () => {
    expect(parsePortForward("22", undefined)).toEqual({ port: 22, protocol: "tcp" });
    expect(parsePortForward("65535", "TCP")).toEqual({ port: 65535, protocol: "tcp" });
    expect(parsePortForward("65536", "tcp")).toBe("port 65536 is not a port number: give one from 1 to 65535");
    expect(parsePortForward("2e3", "tcp")).toBe("port 2e3 is not a port number: give one from 1 to 65535");
    expect(parsePortForward("53", "udp")).toBe("protocol udp is not forwarded yet: only tcp is");
    expect(parsePortForward("22", "sctp")).toBe("protocol sctp is not known: give tcp (or udp, which is not forwarded yet)");
    expect(consoleServerPath("ns", "web", portForwardSegment({ port: 22, protocol: "tcp" }))).toBe("/v1/namespaces/ns/virtualmachineinstances/web/portforward/22/tcp");
  });
});

describe("domain actions on the wire", () => {
  it("keep KubeVirt's subresource names in the handler's paths, and come back by them", () => {
    expect(consoleServerPath("ns", "web", "softReboot")).toBe("/v1/namespaces/ns/virtualmachineinstances/web/softreboot");
    expect(consoleServerPath("ns", "web", "console")).toBe("/v1/namespaces/ns/virtualmachineinstances/web/console");
    expect(VMI_DOMAIN_ACTIONS.map((action) => domainActionOf(DOMAIN_ACTION_SUBRESOURCE[action]))).toEqual(VMI_DOMAIN_ACTIONS);
    expect(domainActionOf("softReboot")).toBeUndefined();
  });
});
