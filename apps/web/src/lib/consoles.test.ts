import { once } from "node:events";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { AddressInfo } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { WebSocketServer } from "ws";
import { DisplayChannel, FUNCTION_KEYS, closeReason, consoleProtocols, consoleUrl } from "./consoles";

describe("console websockets", () => {
  it("use KubeVirt's subresource path on the page's own origin", () => {
    expect(consoleUrl({ protocol: "http:", host: "198.18.255.1:30080" }, "ns", "vm-1", "console")).toBe(
      "ws://198.18.255.1:30080/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm-1/console",
    );
    expect(consoleUrl({ protocol: "https:", host: "vms.example" }, "ns", "vm-1", "vnc")).toMatch(
      /^wss:\/\/vms\.example\/.*\/vnc$/,
    );
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

describe("a shared display's channel", () => {
  it(
    "is a raw channel noVNC takes: the display's bytes reach noVNC, the sharing's " +
      "messages the page, and noVNC's bytes the server",
    async () => {
      // noVNC's own socket layer, as RFB attaches a channel to it (beside RFB, the one module the package exports).
      // Its logging writes to the browser's window.console. It is loaded first: RFB attaches a channel the moment it is
      // made, and a channel that opened before Websock was attached never tells it so (a slow import on a loaded
      // machine once left the test waiting for an "open" that had already passed).
      vi.stubGlobal("window", globalThis);
      const websock = join(dirname(createRequire(import.meta.url).resolve("@novnc/novnc")), "websock.js");
      const { default: Websock } = (await import(/* @vite-ignore */ pathToFileURL(websock).href)) as {
        default: new () => NoVncSocket;
      };
      const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
      await once(server, "listening");
      const got: Buffer[] = [];
      server.on("connection", (ws) => {
        ws.send(JSON.stringify({ type: "state", holder: "alice", you: true, viewers: 1 }));
        ws.send(Buffer.from("RFB 003.008\n"));
        ws.on("message", (data: Buffer) => got.push(data));
      });
      const { port } = server.address() as AddressInfo;
      const sharing: string[] = [];
      const channel = new DisplayChannel(new WebSocket(`ws://127.0.0.1:${String(port)}`), (text) => sharing.push(text));
      const sock = new Websock();
      const opened = new Promise<void>((resolve) => {
        sock.on("open", resolve);
      });
      const received = new Promise<void>((resolve) => {
        sock.on("message", resolve);
      });
      sock.attach(channel);
      await opened;
      await received;
      expect(sock.rQshiftStr(12)).toBe("RFB 003.008\n");
      expect(sharing).toEqual([JSON.stringify({ type: "state", holder: "alice", you: true, viewers: 1 })]);
      sock.sQpushString("RFB 003.008\n");
      sock.flush();
      await vi.waitFor(() => {
        expect(Buffer.concat(got).toString()).toBe("RFB 003.008\n");
      });
      sock.close();
      server.close();
      vi.unstubAllGlobals();
    },
  );
});

/** The part of noVNC's Websock the test drives. */
interface NoVncSocket {
  on(event: "open" | "message", handler: () => void): void;
  attach(channel: object): void;
  rQshiftStr(length: number): string;
  sQpushString(text: string): void;
  flush(): void;
  close(): void;
}
