// The part of noVNC's RFB client the dashboard uses (the package has no types).
declare module "@novnc/novnc" {
  export default class RFB extends EventTarget {
    /**
     * A URL, or a WebSocket-like channel already made (its send, close, binaryType, on* handlers, protocol and
     * readyState).
     */
    constructor(
      target: HTMLElement,
      urlOrChannel: string | object,
      options?: { wsProtocols?: string[]; shared?: boolean; credentials?: { password?: string } },
    );
    scaleViewport: boolean;
    resizeSession: boolean;
    viewOnly: boolean;
    background: string;
    disconnect(): void;
    sendCtrlAltDel(): void;
    sendKey(keysym: number, code: string | null, down?: boolean): void;
    focus(): void;
  }
}
