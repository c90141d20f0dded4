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
  /**
   * The longest clipboard a viewer may send (ClientCutText's text, or its extended form's payload): QEMU's own cap,
   * 1 MiB, past which QEMU drops the client. Every other client message's length is bounded by its format (at most
   * SetEncodings' 4 + 4 × 65535 bytes), so this bounds what a viewer's filter holds (rfb-input.ts).
   */
  clientCutTextBytes: 1 * MiB,
  /**
   * The most the handler reads of one file in a pod's sockets volume, and so the largest screenshot served (a 4K
   * display's PNG stays well under it; the serial log is read by its tail): the launcher writes these files, so their
   * size is the tenant's (pod-volume.ts).
   */
  podFileReadBytes: 32 * MiB,
  /**
   * How long a stat of "/" may take before libuv's threadpool is taken for stuck and the handler not ready
   * (threadpool.ts).
   */
  threadpoolCanaryMs: 5_000,
  /**
   * The largest websocket frame the handler takes from the API: above the API's own bound on a client's frame
   * (apps/api's limits.consoleFrameBytes, 1 MiB), so that nothing it forwards is refused; a larger one closes its
   * session (1009).
   */
  consoleFrameBytes: 4 * MiB,
  /**
   * What a launcher's names may add to /metrics, each VMI: the interfaces and drives labelled (the first ones the
   * launcher answered; a VMI's spec has far fewer), and the length of a name as a label value. The launcher is the
   * tenant's, and every label set is a series the node's scraper keeps; the launcher protocol's ANSWER_BOUNDS already
   * bound its answer (vm-metrics.ts).
   */
  metricDevicesPerVmi: 64,
  metricLabelLength: 128,
  /**
   * The most the handler reads of each file the node labeller's init container writes (libvirt's domain capabilities,
   * the host model's features, the host's capabilities: some 10 to 30 KiB each): a larger one is refused, not read.
   */
  nodeLabellerFileBytes: 1 * MiB,
  /** The most node labeller labels the handler puts on its node: libvirt lists some 60 models and 100 features. */
  nodeLabellerLabels: 1024,
} as const;
