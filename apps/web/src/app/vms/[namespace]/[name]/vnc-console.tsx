"use client";

import type RFB from "@novnc/novnc";
import { useEffect, useRef, useState } from "react";
import {
  DisplayChannel,
  FUNCTION_KEYS,
  KEYSYM,
  closeReason,
  consoleProtocols,
  consoleUrl,
} from "../../../../lib/consoles";
import { useSessionToken } from "../../../../lib/session";
import { KeyboardSharingControls, useKeyboardSharing } from "./keyboard-sharing";
import { type SessionState, SessionStatus } from "./session-state";

// The VM's display through noVNC's RFB client over KubeVirt's VNC websocket:
// scaled to fit, fullscreen, a send-key menu for what the browser keeps for
// itself (Ctrl+Alt+Del, Ctrl+Alt+F1–F12), and pasting text as keystrokes.
// Shared, as the serial console is: others who open it watch too, and only
// the one who holds the keyboard types and points (the others' display is
// view-only here, and the handler drops their input anyway).

function keysymOf(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (char === "\n") return KEYSYM.Return;
  return code < 0x100 ? code : 0x01000000 + code;
}

export function VncConsole({ namespace, name }: { namespace: string; name: string }) {
  const screen = useRef<HTMLDivElement>(null);
  const client = useRef<RFB | null>(null);
  const token = useSessionToken();
  const [state, setState] = useState<SessionState>({ kind: "connecting" });
  const [attempt, setAttempt] = useState(0);
  const [paste, setPaste] = useState("");
  const sharing = useKeyboardSharing();
  const { receive, sendTo } = sharing;
  const holding = sharing.state?.you ?? true;

  useEffect(() => {
    if (!screen.current || !token) return;
    const life = { disposed: false };
    void import("@novnc/novnc").then(({ default: Rfb }) => {
      if (life.disposed || !screen.current) return;
      setState({ kind: "connecting" });
      const socket = new WebSocket(consoleUrl(window.location, namespace, name, "vnc", true), consoleProtocols(token));
      sendTo(socket);
      // Why the session ended, in the server's words (another session took over, the VM stopped); registered before
      // noVNC's handler, which reports the end first.
      let closed: CloseEvent | undefined;
      socket.addEventListener("close", (event) => {
        closed = event;
      });
      let rfb: RFB | undefined = undefined;
      const channel = new DisplayChannel(socket, (text) => {
        const you = receive(text);
        if (you !== undefined && rfb) rfb.viewOnly = !you;
      });
      rfb = new Rfb(screen.current, channel);
      rfb.scaleViewport = true;
      rfb.background = "#000";
      rfb.addEventListener("connect", () => {
        setState({ kind: "connected" });
      });
      rfb.addEventListener("disconnect", (event) => {
        const detail = (event as CustomEvent<{ clean: boolean }>).detail;
        const ended = detail.clean ? "The session ended." : closeReason(1006, "");
        setState({ kind: "closed", reason: closed && closed.reason.length > 0 ? closed.reason : ended });
      });
      client.current = rfb;
    });
    return () => {
      life.disposed = true;
      client.current?.disconnect();
      client.current = null;
    };
  }, [namespace, name, token, attempt, receive, sendTo]);

  const chord = (keysym: number, code: string) => {
    const rfb = client.current;
    if (!rfb) return;
    rfb.sendKey(KEYSYM.ControlL, "ControlLeft", true);
    rfb.sendKey(KEYSYM.AltL, "AltLeft", true);
    rfb.sendKey(keysym, code, true);
    rfb.sendKey(keysym, code, false);
    rfb.sendKey(KEYSYM.AltL, "AltLeft", false);
    rfb.sendKey(KEYSYM.ControlL, "ControlLeft", false);
  };

  return (
    <section aria-label="VNC display">
      <div className="toolbar">
        <SessionStatus state={state} testId="vnc-state" />
        {state.kind === "connected" && <KeyboardSharingControls sharing={sharing} testId="vnc-keyboard" />}
        <span className="spacer" />
        <label className="inline">
          Send keys{" "}
          <select
            value=""
            disabled={state.kind !== "connected" || !holding}
            onChange={(e) => {
              const choice = e.target.value;
              if (choice === "cad") client.current?.sendCtrlAltDel();
              const key = FUNCTION_KEYS.find((k) => k.label === choice);
              if (key) chord(key.keysym, key.code);
              client.current?.focus();
            }}
          >
            <option value="">Choose…</option>
            <option value="cad">Ctrl+Alt+Del</option>
            {FUNCTION_KEYS.map((k) => (
              <option key={k.label} value={k.label}>
                Ctrl+Alt+{k.label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="secondary" onClick={() => void screen.current?.requestFullscreen()}>
          Fullscreen
        </button>
        <button
          type="button"
          className="secondary"
          onClick={() => {
            setAttempt(attempt + 1);
          }}
        >
          Reconnect
        </button>
      </div>
      <form
        className="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          for (const char of paste) {
            const keysym = keysymOf(char);
            client.current?.sendKey(keysym, null, true);
            client.current?.sendKey(keysym, null, false);
          }
          setPaste("");
        }}
      >
        <label className="inline" htmlFor="vnc-paste">
          Paste as keystrokes
        </label>
        <input
          id="vnc-paste"
          value={paste}
          onChange={(e) => {
            setPaste(e.target.value);
          }}
        />
        <button type="submit" className="secondary" disabled={state.kind !== "connected" || !holding || paste === ""}>
          Type it
        </button>
      </form>
      <div ref={screen} className="vnc-screen" data-testid="vnc-screen" />
    </section>
  );
}
