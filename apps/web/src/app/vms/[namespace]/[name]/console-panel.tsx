"use client";

import type { ActionAvailability } from "@kubevirt-ts/vm-rules";
import { useEffect, useRef, useState } from "react";
import { sentence } from "../../../../lib/vm-status";
import { SerialConsole } from "./serial-console";
import { VncConsole } from "./vnc-console";

// A VM's serial console or display where it may open: refused with the RBAC
// reason, or with why the VM's state does not allow it now, else connected.
// The same panel is the Console and VNC tabs and the pop-out window. A live
// migration moves the VM to another node and its console with it: when the
// VM's node changes, the session is opened again, on the new node.

export type ConsoleKind = "console" | "vnc";

/** The pop-out window of a VM's console, by the path the dashboard serves it at. */
export const popOutUrl = (namespace: string, name: string, kind: ConsoleKind): string =>
  `/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/console?ns=` +
  `${encodeURIComponent(namespace)}&kind=${kind}`;

export function ConsolePanel({
  kind,
  namespace,
  name,
  node,
  permission,
  state,
}: {
  kind: ConsoleKind;
  namespace: string;
  name: string;
  node: string | undefined;
  permission: { allowed: boolean; reason?: string } | undefined;
  state: ActionAvailability | undefined;
}) {
  if (!permission?.allowed)
    return (
      <p className="error" role="alert">
        {permission?.reason ?? "Checking your permissions…"}
      </p>
    );
  if (state && !state.available) return <p role="status">{sentence(state.reason)}</p>;
  // Keyed by the node: a VM that moved gets a new session where it now runs.
  return kind === "console" ? (
    <SerialConsole key={node} namespace={namespace} name={name} />
  ) : (
    <VncConsole key={node} namespace={namespace} name={name} />
  );
}

/**
 * The panel with "Open in a new window": the console moves to a window of its own (this tab lets it go, as one
 * VNC session takes over another) and comes back here when that window closes or on "Show it here".
 */
export function PoppableConsole(props: Parameters<typeof ConsolePanel>[0]) {
  const { kind, namespace, name } = props;
  const [window_, setWindow] = useState<Window | null>(null);
  const watch = useRef<ReturnType<typeof setInterval> | undefined>(undefined);
  useEffect(
    () => () => {
      clearInterval(watch.current);
    },
    [],
  );
  const popOut = () => {
    // Not noopener: the window shares this tab's session (sessionStorage is copied to a window this tab opens).
    const opened = window.open(
      popOutUrl(namespace, name, kind),
      `${kind}-${namespace}-${name}`,
      "popup,width=1040,height=760",
    );
    if (!opened) return;
    setWindow(opened);
    clearInterval(watch.current);
    watch.current = setInterval(() => {
      if (opened.closed) {
        clearInterval(watch.current);
        setWindow(null);
      }
    }, 1000);
  };
  if (window_ && !window_.closed) {
    return (
      <p role="status" className="card" data-testid="console-popped-out">
        The {kind === "console" ? "serial console" : "display"} of {name} is open in its own window.{" "}
        <button
          type="button"
          className="secondary"
          onClick={() => {
            window_.focus();
          }}
        >
          Go to it
        </button>{" "}
        <button
          type="button"
          className="secondary"
          onClick={() => {
            clearInterval(watch.current);
            window_.close();
            setWindow(null);
          }}
        >
          Show it here
        </button>
      </p>
    );
  }
  return (
    <>
      {props.permission?.allowed && (!props.state || props.state.available) && (
        <div className="toolbar">
          <span className="spacer" />
          <button type="button" className="secondary" onClick={popOut}>
            Open in a new window
          </button>
        </div>
      )}
      <ConsolePanel {...props} />
    </>
  );
}
