// The state of a console or VNC session, as words everyone can read and
// assistive technology announces.

export type SessionState = { kind: "connecting" } | { kind: "connected" } | { kind: "closed"; reason: string };

export function SessionStatus({ state, testId }: { state: SessionState; testId: string }) {
  return (
    <span role="status" data-session-state={state.kind} data-testid={testId}>
      {state.kind === "connecting"
        ? "Connecting…"
        : state.kind === "connected"
          ? "Connected"
          : `Disconnected: ${state.reason}`}
    </span>
  );
}
