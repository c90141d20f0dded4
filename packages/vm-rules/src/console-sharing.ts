// A serial console or VNC display several people watch at once, while one
// of them holds the keyboard: KubeVirt's console and VNC take one session at
// a time (a new one takes over), which stays what a client gets unless it
// asks to share (KubeVirt issue #7041). The bytes stay binary frames as in
// plain.kubevirt.io; the sharing's messages are text frames of JSON, one
// each way, defined here for the handler and the dashboard alike.

/**
 * The query a console's or display's websocket carries to share it (the dashboard's); without it, a new session takes
 * over.
 */
export const SHARED_CONSOLE_QUERY = "shared";

/** From the handler to each viewer. */
export type ConsoleSharingMessage =
  /** Who holds the keyboard, whether it is this viewer, and how many watch. */
  | { type: "state"; holder: string; you: boolean; viewers: number }
  /** To the holder: a viewer asks for the keyboard. */
  | { type: "request"; from: string };

/** From a viewer to the handler: ask for the keyboard, or (the holder) give it to whoever asked last. */
export type ConsoleSharingCommand = { type: "request" } | { type: "grant" };

/** A command as a text frame carries it, or undefined for anything else. */
export function parseSharingCommand(text: string): ConsoleSharingCommand | undefined {
  try {
    const value = JSON.parse(text) as { type?: unknown };
    return value.type === "request" || value.type === "grant" ? { type: value.type } : undefined;
  } catch {
    return undefined;
  }
}
