import { PORT_FORWARD_PROTOCOLS, guestAgentInfo, guestOsInfo, virtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { z } from "zod";

// The protocol the handler speaks with each launcher over the unix socket in
// the launcher pod's sockets volume (SocketsVolume in kubevirt-api's
// launcher-layout.ts): one JSON object per line each way, a version on
// every request so that a handler and a launcher of different
// releases can tell they do not understand each other. Every method is
// declared once here, with the schema of its params (checked by the
// launcher on every call) and of its result (checked by the handler on
// every answer): anyone who can run a pod with the launcher's labels can
// speak this protocol to the handler, so neither side trusts the other's
// bytes.

export const PROTOCOL_VERSION = 1;

/**
 * The longest line the handler reads from a launcher. Answers are a domain
 * status, a guest's OS description or an error message: a few hundred
 * bytes. A longer line is a broken or hostile launcher.
 */
export const MAX_RESPONSE_LINE_BYTES = 1024 * 1024;
/**
 * The longest line the launcher reads from the handler: a `sync` carries the
 * VMI, which the API server keeps under etcd's 1.5 MiB request limit.
 */
export const MAX_REQUEST_LINE_BYTES = 4 * 1024 * 1024;
/** The longest error message a launcher sends; the launcher cuts longer ones. */
export const MAX_ERROR_MESSAGE_LENGTH = 4096;

export const ERROR_CODES = ["BadRequest", "UnsupportedVersion", "NotDefined", "Failed"] as const;
/** Why the launcher refused or failed a call. */
export type ErrorCode = (typeof ERROR_CODES)[number];

const DOMAIN_STATES = ["NoDomain", "Running", "Blocked", "Paused", "Shutdown", "Shutoff", "Crashed", "PMSuspended"] as const;

/** What the launcher knows about its domain. */
export const domainStatus = z.strictObject({
  /** libvirt's state: Running, Paused, Shutdown (shutting down), Shutoff, Crashed, or NoDomain before sync. */
  state: z.enum(DOMAIN_STATES),
  /** The domain type in use: kvm, or qemu for emulation. */
  domainType: z.enum(["kvm", "qemu"]).optional(),
  /** "frozen" while the guest's file systems are frozen through its agent (freeze). */
  fsFreezeStatus: z.literal("frozen").optional(),
  /** Whether the access credentials given through the guest agent are in the guest, and if not why; absent before the agent answered. */
  accessCredentials: z.strictObject({ synchronized: z.boolean(), message: z.string() }).optional(),
});
export type DomainStatus = z.infer<typeof domainStatus>;

const count = z.number().nonnegative();

/**
 * What libvirt counts of the running domain (its domain stats), in libvirt's units: nanoseconds, bytes, KiB of
 * memory. Each device is named as the VMI names it (its disk's or interface's name); a figure libvirt does not
 * report for this domain (the guest's own memory view without a balloon driver) is left out.
 */
export const domainStats = z.strictObject({
  cpu: z.strictObject({ timeNs: count, userNs: count.optional(), systemNs: count.optional() }),
  vcpus: z.array(z.strictObject({ id: z.number().int().nonnegative(), state: z.enum(["OFFLINE", "RUNNING", "BLOCKED"]), timeNs: count, waitNs: count.optional(), delayNs: count.optional() })),
  memory: z.strictObject({
    /** The domain's memory (maximum) and its balloon's current size, KiB. */
    domainKiB: count.optional(),
    actualKiB: count.optional(),
    /** QEMU's resident set, KiB. */
    rssKiB: count.optional(),
    /** The guest's own view, through its balloon driver, KiB. */
    availableKiB: count.optional(),
    usableKiB: count.optional(),
    unusedKiB: count.optional(),
    swapInKiB: count.optional(),
    swapOutKiB: count.optional(),
    majorFaults: count.optional(),
    minorFaults: count.optional(),
  }),
  interfaces: z.array(z.strictObject({ name: z.string(), rxBytes: count, rxPackets: count, rxErrors: count, rxDrops: count, txBytes: count, txPackets: count, txErrors: count, txDrops: count })),
  disks: z.array(z.strictObject({ name: z.string(), readBytes: count, readRequests: count, readTimeNs: count, writeBytes: count, writeRequests: count, writeTimeNs: count, flushRequests: count, flushTimeNs: count })),
});
export type DomainStats = z.infer<typeof domainStats>;

const noParams = z.undefined();

interface MethodSpec {
  params: z.ZodType;
  result: z.ZodType;
  /** How long the handler waits for the answer by default. */
  timeoutMs: number;
}

/** Every method of the protocol: its params, its result and how long an answer may take. */
export const launcherMethods = {
  /** Defines and starts the domain of the VMI sent, if it is not running yet; idempotent. */
  sync: { params: virtualMachineInstance, result: domainStatus, timeoutMs: 60_000 },
  state: { params: noParams, result: domainStatus, timeoutMs: 10_000 },
  pause: { params: noParams, result: domainStatus, timeoutMs: 30_000 },
  unpause: { params: noParams, result: domainStatus, timeoutMs: 30_000 },
  /** Turns the domain off at once, as pulling its power (KubeVirt's KillVMI): a stop whose grace period ran out, or was cut to 0. */
  kill: { params: noParams, result: domainStatus, timeoutMs: 30_000 },
  /** Asks the guest to reboot through ACPI. */
  softReboot: { params: noParams, result: domainStatus, timeoutMs: 30_000 },
  /** Resets the virtual machine at once, like a hardware reset. */
  reset: { params: noParams, result: domainStatus, timeoutMs: 30_000 },
  /** The guest's OS as its QEMU agent reports it; the launcher gives the agent 5 s. */
  guestOsInfo: { params: noParams, result: guestOsInfo, timeoutMs: 15_000 },
  /** All the agent tells (KubeVirt's guestosinfo, userlist and filesystemlist); the launcher gives each of its queries 5 s. */
  guestAgentInfo: { params: noParams, result: guestAgentInfo, timeoutMs: 45_000 },
  /** Freezes the guest's file systems through its agent; they thaw by themselves after unfreezeTimeoutSeconds (0: never). */
  freeze: { params: z.strictObject({ unfreezeTimeoutSeconds: z.number().int().nonnegative() }), result: domainStatus, timeoutMs: 60_000 },
  /** Thaws the guest's file systems. */
  unfreeze: { params: noParams, result: domainStatus, timeoutMs: 60_000 },
  /** What libvirt counts of the running domain: CPU, vCPUs, memory, network and disks (the handler's VM metrics). */
  domainStats: { params: noParams, result: domainStats, timeoutMs: 10_000 },
  /** Writes the display's screenshot, as PNG, into the sockets volume (SocketsVolume.screenshot): too big for a line. */
  screenshot: { params: noParams, result: z.strictObject({ bytes: z.number().int().positive() }), timeoutMs: 30_000 },
  /**
   * Makes the launcher tunnel to a TCP port of its guest (on its pod-network interface) through the socket
   * portForwardSocket names in the sockets volume, one connection to the guest per connection to it; idempotent.
   */
  portForward: { params: z.strictObject({ port: z.number().int().min(1).max(65535), protocol: z.enum(PORT_FORWARD_PROTOCOLS) }), result: z.strictObject({}), timeoutMs: 30_000 },
} as const satisfies Record<string, MethodSpec>;

export type Method = keyof typeof launcherMethods;
export const METHODS = Object.keys(launcherMethods) as Method[];
/** What a caller passes to a method. */
export type Params<M extends Method> = z.input<(typeof launcherMethods)[M]["params"]>;
/** What a method's implementation receives, once its params are checked. */
export type CheckedParams<M extends Method> = z.output<(typeof launcherMethods)[M]["params"]>;
/** What a method answers. */
export type Result<M extends Method> = z.output<(typeof launcherMethods)[M]["result"]>;

export const requestSchema = z.strictObject({
  version: z.number().int(),
  id: z.number().int().positive(),
  method: z.enum(METHODS as [Method, ...Method[]]),
  params: z.unknown().optional(),
});
export type Request = z.infer<typeof requestSchema>;

const id = z.number().int().nonnegative();
/** One answer on the wire; the result's own shape is checked against its method's schema. */
export const responseSchema = z.union([
  z.strictObject({ id, result: z.unknown().refine((value) => value !== undefined, "is missing") }),
  z.strictObject({ id, error: z.strictObject({ code: z.enum(ERROR_CODES), message: z.string().max(MAX_ERROR_MESSAGE_LENGTH) }) }),
]);
export type Response = { id: number; result: unknown } | { id: number; error: { code: ErrorCode; message: string } };

/** A zod error as one line: each problem with the path of what is wrong, below `root`. */
export function describeIssues(error: z.ZodError, root: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${[root, ...issue.path.map(String)].join(".")}: ${issue.message}`)
    .join("; ");
}
