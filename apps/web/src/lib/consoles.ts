import { SHARED_CONSOLE_QUERY } from "@kubevirt-ts/vm-rules";

// The URL and subprotocols of a VMI's console or VNC websocket on the
// dashboard's own origin, as KubeVirt's virtctl and noVNC use them: the
// token goes as a bearer subprotocol, since a browser cannot set headers.

export function consoleUrl(
  location: { protocol: string; host: string },
  namespace: string,
  name: string,
  kind: "console" | "vnc",
  shared = false,
): string {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return (
    `${scheme}://${location.host}/apis/subresources.kubevirt.io/v1/namespaces/` +
    `${encodeURIComponent(namespace)}/virtualmachineinstances/${encodeURIComponent(name)}/${kind}` +
    (shared ? `?${SHARED_CONSOLE_QUERY}=true` : "")
  );
}

export function consoleProtocols(token: string): string[] {
  const bytes = new TextEncoder().encode(token);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  const base64url = btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return ["plain.kubevirt.io", `base64url.bearer.authorization.k8s.io.${base64url}`];
}

/**
 * A shared display's websocket as noVNC's RFB client takes a "raw channel": the display's binary frames go to noVNC,
 * the sharing's text frames (console-sharing.ts) to `onSharing`, which noVNC would take for RFB bytes.
 */
export class DisplayChannel {
  onopen: ((event: Event) => void) | null = null;
  onmessage: ((event: MessageEvent) => void) | null = null;
  onclose: ((event: CloseEvent) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  private readonly socket: WebSocket;

  constructor(socket: WebSocket, onSharing: (text: string) => void) {
    this.socket = socket;
    socket.binaryType = "arraybuffer";
    socket.onopen = (event) => {
      this.onopen?.(event);
    };
    socket.onclose = (event) => {
      this.onclose?.(event);
    };
    socket.onerror = (event) => {
      this.onerror?.(event);
    };
    socket.onmessage = (event: MessageEvent<unknown>) => {
      if (typeof event.data === "string") onSharing(event.data);
      else this.onmessage?.(event);
    };
  }

  get binaryType(): BinaryType {
    return this.socket.binaryType;
  }

  set binaryType(type: BinaryType) {
    this.socket.binaryType = type;
  }

  get protocol(): string {
    return this.socket.protocol;
  }

  get readyState(): number {
    return this.socket.readyState;
  }

  send(data: Parameters<WebSocket["send"]>[0]): void {
    this.socket.send(data);
  }

  close(code?: number, reason?: string): void {
    this.socket.close(code, reason);
  }
}

/** Why a session ended, in words, from the API's close code and reason. */
export function closeReason(code: number, reason: string): string {
  if (reason) return reason;
  if (code === 1006) return "The connection was lost.";
  return `The session ended (code ${String(code)}).`;
}

/** X11 keysyms of F1–F12, for the VNC send-key menu. */
export const FUNCTION_KEYS = Array.from({ length: 12 }, (_, i) => ({
  label: `F${String(i + 1)}`,
  keysym: 0xffbe + i,
  code: `F${String(i + 1)}`,
}));
export const KEYSYM = { ControlL: 0xffe3, AltL: 0xffe9, Return: 0xff0d } as const;
