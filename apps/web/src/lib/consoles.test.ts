import { describe, expect, it } from "vitest";
import { FUNCTION_KEYS, closeReason, consoleProtocols, consoleUrl } from "./consoles";

describe("console websockets", () => {
  it("use KubeVirt's subresource path on the page's own origin", () => {
    expect(consoleUrl({ protocol: "http:", host: "198.18.255.1:30080" }, "ns", "vm-1", "console")).toBe("ws://198.18.255.1:30080/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/console");
    expect(consoleUrl({ protocol: "https:", host: "vms.example" }, "ns", "vm-1", "vnc")).toMatch(/^wss:\/\/vms\.example\/.*\/vnc$/);
  });

  it("carry the token as a base64url bearer subprotocol after plain.kubevirt.io", () => {
    const [plain, bearer] = consoleProtocols("eyJ+a/b=");
    expect(plain).toBe("plain.kubevirt.io");
    expect(bearer).toBe(`base64url.bearer.authorization.k8s.io.${Buffer.from("eyJ+a/b=").toString("base64url")}`);
  });

  it("say why a session ended", () => {
    expect(closeReason(4409, "The VM web is not running")).toBe("The VM web is not running");
    expect(closeReason(1006, "")).toBe("The connection was lost.");
  });

  it("know the keysyms of F1 to F12", () => {
    expect(FUNCTION_KEYS[0]).toEqual({ label: "F1", keysym: 0xffbe, code: "F1" });
    expect(FUNCTION_KEYS[11]?.keysym).toBe(0xffc9);
  });
});
