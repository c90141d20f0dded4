// Bounds on what the handler holds for a peer, in one place.

const KiB = 1024;
const MiB = 1024 * KiB;

export const limits = {
  /**
   * The pipe from a socket of QEMU (serial console, VNC) to a viewer's websocket (virt-api, one viewer of a shared
   * display): reading QEMU's socket pauses while the viewer holds more than highBytes unsent and resumes at
   * lowBytes; a viewer past maxBytes, or above highBytes for stallMs, is cut off with close code 1013, its socket
   * destroyed closeGraceMs later. virt-api cuts off its own slow clients first (its limits.consolePipe, 10 s).
   */
  viewerPipe: { highBytes: 1 * MiB, lowBytes: 256 * KiB, maxBytes: 4 * MiB, stallMs: 20_000, closeGraceMs: 5_000 },
  /**
   * A viewer of a shared serial console (one QEMU socket for all, never paused for one of them) that falls this far
   * behind the console's output is cut off rather than holding the others back or growing the handler's memory.
   */
  sharedConsoleBehindBytes: 4 * MiB,
} as const;
