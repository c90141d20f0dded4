// Every bound on what the API reads from the network, in one place. A
// request past a bound is refused before it is parsed or authenticated:
// 413 for bodies, 431 for headers, close code 1009 for websocket frames;
// tRPC requests past their batch size get 400 and past their concurrency 429,
// before their body is read (trpc-gate.ts).

import { TRPC_MAX_BATCH } from "@kubevirt-ts/kubevirt-api";

const KiB = 1024;
const MiB = 1024 * KiB;

export const limits = {
  /**
   * Request line and headers of every HTTP request and websocket upgrade,
   * read before anything else (Node answers 431 past it). A bearer token is
   * a few KiB; Node's own default is 16 KiB, kept explicit here.
   */
  headerBytes: 16 * KiB,
  /**
   * An AdmissionReview from the API server: the object and, on update, the
   * old object. Kubernetes stores objects of at most 1.5 MiB (etcd's request
   * limit), so two of them and the envelope fit in 4 MiB.
   */
  webhookBodyBytes: 4 * MiB,
  /**
   * A tRPC request body: a batch of queries or a mutation carrying one VM
   * (itself at most 1.5 MiB once stored).
   */
  trpcBodyBytes: 2 * MiB,
  /**
   * tRPC request bodies being read at once, in all, whoever sends them: a request reserves its Content-Length (or
   * trpcBodyBytes when it is chunked) before its body is read, until its response closes; past it, 429 with
   * Retry-After and the body unread. Bounds virt-api's memory (256Mi) however many callers send bodies.
   */
  trpcBodyBytesInFlight: 16 * MiB,
  /**
   * The most procedures one tRPC request names (the dashboard's client splits its batches at it); refused with 400 past
   * it, before anything runs.
   */
  trpcBatchSize: TRPC_MAX_BATCH,
  /**
   * tRPC requests (queries and mutations) in flight at once: in all, and per caller (the user a TokenReview names
   * its bearer token, so a user's tokens share its places; the address for the public health check). Past either, 429
   * with Retry-After, before the body is read. A caller's own limit is the dashboard's busiest moment (a bulk action on
   * a page of 100 VMs is 7 batches) with room to spare.
   */
  trpcInFlight: 64,
  trpcInFlightPerCaller: 16,
  /**
   * tRPC subscriptions (SSE streams, each a watch on the API server, held open) at once, counted apart from the
   * requests above: in all, and per caller (a dashboard tab holds two or three; a few tabs fit).
   */
  trpcSubscriptions: 512,
  trpcSubscriptionsPerCaller: 16,
  /** What a refused caller is told to wait before trying again (Retry-After). */
  trpcRetryAfterSeconds: 1,
  /** The options of a subresource request (StartOptions, StopOptions, ...): a few fields. */
  subresourceBodyBytes: 64 * KiB,
  /**
   * One websocket frame from a console client: keystrokes, a paste, a VNC
   * client message. The ws server closes the socket with 1009 past it.
   */
  consoleFrameBytes: 1 * MiB,
  /**
   * What a console client may send before its session is authorized and
   * connected to the handler (it is held until then): a few keystrokes and
   * the VNC handshake, never a stream.
   */
  consoleEarlyBytes: 64 * KiB,
  /**
   * One websocket frame from a handler (a console's or display's bytes, as the handler read them from QEMU's socket,
   * at most 64 KiB at a time): well above that, far below ws's default of 100 MiB. A larger one closes the session.
   */
  handlerFrameBytes: 4 * MiB,
  /**
   * A console session's pipe, each way (handler to client, client to handler): reading from one side pauses while
   * the other holds more than highBytes unsent and resumes at lowBytes; a peer past maxBytes, or above highBytes
   * for stallMs (it stopped reading: 768 KiB not drained in 10 s, slower than any link a VNC session is usable on),
   * is cut off with close code 1013, its socket destroyed closeGraceMs later if it reads nothing more. What virt-api
   * holds per session stays under maxBytes each way, however slowly a client reads.
   */
  consolePipe: { highBytes: 1 * MiB, lowBytes: 256 * KiB, maxBytes: 4 * MiB, stallMs: 10_000, closeGraceMs: 5_000 },
  /**
   * The watch events an SSE stream holds for a client that reads slower than the cluster changes: past either
   * bound (count, JSON length) they are dropped and the watch stopped; the client gets a fresh list once it reads.
   */
  watchQueue: { events: 1_000, bytes: 16 * MiB },
  /** How long an HTTP request may take to arrive, headers and body (slow senders are cut off). */
  requestTimeoutMs: 30_000,
  /**
   * How long an admission request may take to arrive: the API server gives up on a webhook after its timeoutSeconds
   * (10).
   */
  webhookRequestTimeoutMs: 10_000,
} as const;
