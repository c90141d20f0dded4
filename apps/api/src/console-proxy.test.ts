import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { CONSOLE_PATH, consoleTarget, upgradeToken } from "./console-proxy.ts";

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe("the console proxy's request parsing", () => {
  it("takes the token from the Authorization header", () => {
    expect(upgradeToken(req({ authorization: "Bearer abc.def" }))).toBe("abc.def");
  });

  it("takes the token from the bearer subprotocol browsers use", () => {
    const encoded = Buffer.from("eyJhbGciOi.x-y_z").toString("base64url");
    expect(upgradeToken(req({ "sec-websocket-protocol": `plain.kubevirt.io, base64url.bearer.authorization.k8s.io.${encoded}` }))).toBe("eyJhbGciOi.x-y_z");
  });

  it("has no token when neither is there", () => {
    expect(upgradeToken(req({ "sec-websocket-protocol": "plain.kubevirt.io" }))).toBeUndefined();
  });

  it("serves KubeVirt's subresource paths of console and vnc only, in both versions of the subresource API", () => {
    expect(consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/console")).toEqual({ version: "v1", namespace: "ns", name: "vm-1", kind: "console" });
    expect(consoleTarget("/apis/subresources.kubevirt.io/v1alpha3/namespaces/ns/virtualmachineinstances/vm-1/vnc?preserveSession=true")).toEqual({ version: "v1alpha3", namespace: "ns", name: "vm-1", kind: "vnc" });
    expect(consoleTarget("/apis/subresources.kubevirt.io/v2/namespaces/ns/virtualmachineinstances/vm-1/console")).toBeUndefined();
    expect(CONSOLE_PATH.test("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/portforward")).toBe(false);
    expect(CONSOLE_PATH.test("/apis/subresources.kubevirt.io/v1/namespaces/../virtualmachineinstances/x/console")).toBe(false);
  });
});
