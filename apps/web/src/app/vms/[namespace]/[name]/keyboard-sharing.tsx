"use client";

import { useCallback, useRef, useState } from "react";
import type { ConsoleSharingCommand, ConsoleSharingMessage } from "@kubevirt-ts/vm-rules";

// The sharing of a serial console or display among its viewers, as the
// page shows it: who holds the keyboard and how many watch, "Ask for the
// keyboard" for a viewer, and the request with "Give the keyboard" for the
// holder. The handler decides who holds it and drops everyone else's input;
// the page only follows what it says (console-sharing.ts).

type SharingState = Extract<ConsoleSharingMessage, { type: "state" }>;

export interface KeyboardSharing {
  /**
   * Takes a sharing message (a text frame of the session); returns whether this viewer holds the keyboard, when the
   * message says.
   */
  receive: (text: string) => boolean | undefined;
  /** Where this viewer's requests go: the session's socket. */
  sendTo: (socket: WebSocket) => void;
  state: SharingState | null;
  asked: string | null;
  waiting: boolean;
  command: (c: ConsoleSharingCommand) => void;
}

export function useKeyboardSharing(): KeyboardSharing {
  const [state, setState] = useState<SharingState | null>(null);
  const [asked, setAsked] = useState<string | null>(null);
  const [waiting, setWaiting] = useState(false);
  const socket = useRef<WebSocket | null>(null);
  const receive = useCallback((text: string): boolean | undefined => {
    const message = JSON.parse(text) as ConsoleSharingMessage;
    if (message.type === "request") {
      setAsked(message.from);
      return undefined;
    }
    setState(message);
    setWaiting(false);
    if (!message.you) setAsked(null);
    return message.you;
  }, []);
  const sendTo = useCallback((s: WebSocket) => {
    socket.current = s;
  }, []);
  const command = useCallback((c: ConsoleSharingCommand) => {
    if (socket.current?.readyState === WebSocket.OPEN) socket.current.send(JSON.stringify(c));
    if (c.type === "request") setWaiting(true);
    else setAsked(null);
  }, []);
  return { receive, sendTo, state, asked, waiting, command };
}

/** Who has the keyboard, and the request and the grant, for a connected session. */
export function KeyboardSharingControls({ sharing, testId }: { sharing: KeyboardSharing; testId: string }) {
  const { state, asked, waiting, command } = sharing;
  if (!state) return null;
  return (
    <>
      <span data-testid={testId} role="status">
        {state.you
          ? `You have the keyboard${state.viewers > 1 ? ` (${String(state.viewers - 1)} more watching)` : ""}.`
          : `Watching: ${state.holder || "someone"} has the keyboard.`}
      </span>
      {!state.you && (
        <button
          type="button"
          className="secondary"
          disabled={waiting}
          onClick={() => {
            command({ type: "request" });
          }}
        >
          {waiting ? "Asked for the keyboard…" : "Ask for the keyboard"}
        </button>
      )}
      {state.you && asked !== null && (
        <span role="alert" className="inline">
          {asked || "Someone"} asks for the keyboard.{" "}
          <button
            type="button"
            className="secondary"
            onClick={() => {
              command({ type: "grant" });
            }}
          >
            Give the keyboard
          </button>
        </span>
      )}
    </>
  );
}
