"use client";

import "@xterm/xterm/css/xterm.css";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { closeReason, consoleProtocols, consoleUrl } from "../../../../lib/consoles";
import { useSessionToken } from "../../../../lib/session";
import { useTRPC } from "../../../../lib/trpc";
import { KeyboardSharingControls, useKeyboardSharing } from "./keyboard-sharing";
import { type SessionState, SessionStatus } from "./session-state";

// The serial console: xterm.js fitted to its box, with scrollback and the
// browser's copy and paste, over KubeVirt's console websocket, shared: others
// who open it watch too, and one holds the keyboard at a time (a viewer asks
// for it, the holder gives it). What the guest printed before it opened (its
// serial log, for a user who may read it) is shown first. Its state is
// always shown, and a closed session can be reopened.

/** How much of the serial log is shown above a session that opens. */
const HISTORY_BYTES = 64 * 1024;
/** A monospace font Debian's browsers have, and a line height that leaves room for underscores below the baseline. */
const FONT = { fontFamily: '"DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace', lineHeight: 1.2 };

export function SerialConsole({ namespace, name }: { namespace: string; name: string }) {
  const box = useRef<HTMLDivElement>(null);
  const token = useSessionToken();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [state, setState] = useState<SessionState>({ kind: "connecting" });
  const [attempt, setAttempt] = useState(0);
  const sharing = useKeyboardSharing();
  const { receive, sendTo } = sharing;

  useEffect(() => {
    if (!box.current || !token) return;
    const life: { disposed: boolean; cleanup?: () => void } = { disposed: false };
    const disposed = () => life.disposed;
    void (async () => {
      const [{ Terminal }, { FitAddon }] = await Promise.all([import("@xterm/xterm"), import("@xterm/addon-fit")]);
      if (life.disposed || !box.current) return;
      const terminal = new Terminal({ scrollback: 5000, convertEol: false, cursorBlink: true, fontSize: 14, ...FONT });
      const fit = new FitAddon();
      terminal.loadAddon(fit);
      terminal.open(box.current);
      fit.fit();
      // Earlier output first; a console opens without it when the log cannot be read (no permission, no log yet).
      const history = await queryClient
        .query({ ...trpc.vms.serialLog.queryOptions({ namespace, name }), staleTime: 0, retry: false })
        .catch(() => "");
      if (disposed()) {
        terminal.dispose();
        return;
      }
      if (history) terminal.write(history.slice(-HISTORY_BYTES));
      const socket = new WebSocket(
        consoleUrl(window.location, namespace, name, "console", true),
        consoleProtocols(token),
      );
      sendTo(socket);
      // Only the holder's keystrokes reach the guest (the handler drops the others'); known from the handler's state.
      let holding = true;
      socket.binaryType = "arraybuffer";
      setState({ kind: "connecting" });
      socket.onopen = () => {
        setState({ kind: "connected" });
        terminal.focus();
        // A newline wakes the getty, so a login prompt shows at once.
        socket.send(new TextEncoder().encode("\r"));
      };
      socket.onmessage = (event: MessageEvent<ArrayBuffer | string>) => {
        if (typeof event.data !== "string") {
          terminal.write(new Uint8Array(event.data));
          return;
        }
        holding = receive(event.data) ?? holding;
      };
      socket.onclose = (event) => {
        setState({ kind: "closed", reason: closeReason(event.code, event.reason) });
      };
      const input = terminal.onData((data) => {
        if (holding && socket.readyState === WebSocket.OPEN) socket.send(new TextEncoder().encode(data));
      });
      const resize = new ResizeObserver(() => {
        fit.fit();
      });
      resize.observe(box.current);
      life.cleanup = () => {
        resize.disconnect();
        input.dispose();
        socket.onclose = null;
        socket.close();
        terminal.dispose();
      };
    })();
    return () => {
      life.disposed = true;
      life.cleanup?.();
    };
  }, [namespace, name, token, attempt, queryClient, trpc, receive, sendTo]);

  return (
    <section aria-label="Serial console">
      <div className="toolbar">
        <SessionStatus state={state} testId="console-state" />
        {state.kind === "connected" && <KeyboardSharingControls sharing={sharing} testId="console-keyboard" />}
        <span className="spacer" />
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
      <div ref={box} className="terminal" data-testid="serial-console" />
    </section>
  );
}
