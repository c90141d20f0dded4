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
    expect(
      upgradeToken(
        req({ "sec-websocket-protocol": `plain.kubevirt.io, base64url.bearer.authorization.k8s.io.${encoded}` }),
      ),
    ).toBe("eyJhbGciOi.x-y_z");
  });

  it("has no token when neither is there", () => {
    expect(upgradeToken(req({ "sec-websocket-protocol": "plain.kubevirt.io" }))).toBeUndefined();
  });

  it(
    "serves KubeVirt's subresource paths of console, vnc and portforward only, in " +
      "both versions of the subresource API",
    () => {
      const vmi = { namespace: "ns", name: "vm-1", resource: "virtualmachineinstances" };
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/console"),
      ).toEqual({ ...vmi, version: "v1", kind: "console" });
      expect(
        consoleTarget(
          "/apis/subresources.kubevirt.io/v1alpha3/namespaces/ns/virtualmachineinstances/vm-1/vnc?preserveSession=true",
        ),
      ).toEqual({ ...vmi, version: "v1alpha3", kind: "vnc" });
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v2/namespaces/ns/virtualmachineinstances/vm-1/console"),
      ).toBeUndefined();
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/console/22"),
      ).toBeUndefined();
      // A port forward names its port, and maybe its protocol; a VM's reaches the VMI of its name.
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/portforward"),
      ).toBeUndefined();
      expect(
        consoleTarget(
          "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/portforward/22/tcp",
        ),
      ).toEqual({ ...vmi, version: "v1", kind: "portforward", forward: { port: 22, protocol: "tcp" } });
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm-1/portforward/8080"),
      ).toEqual({
        ...vmi,
        resource: "virtualmachines",
        version: "v1",
        kind: "portforward",
        forward: { port: 8080, protocol: "tcp" },
      });
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm-1/portforward/53/udp"),
      ).toMatchObject({ forward: "protocol udp is not forwarded yet: only tcp is" });
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm-1/portforward/0"),
      ).toMatchObject({ forward: "port 0 is not a port number: give one from 1 to 65535" });
      expect(
        consoleTarget("/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/vm-1/console"),
      ).toBeUndefined();
      expect(
        CONSOLE_PATH.test("/apis/subresources.kubevirt.io/v1/namespaces/../virtualmachineinstances/x/console"),
      ).toBe(false);
    },
  );
});
