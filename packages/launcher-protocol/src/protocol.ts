import { PORT_FORWARD_PROTOCOLS, guestOsInfo, virtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { guestAgentInfo } from "@kubevirt-ts/vm-rules";
import { z } from "zod";
import { bounded } from "./bounds.ts";

// The protocol the handler speaks with each launcher over the unix socket in
// the launcher pod's sockets volume (SocketsVolume in node-contract's
// launcher-layout.ts): one JSON object per line each way, a version on
// every request. A release speaks its own version and the previous
// release's, so that a new handler drives the launchers of the VMs that
// ran through its upgrade, and an old handler (its DaemonSet still
// rolling) a new launcher: the handler's first call, `hello`, finds the
// highest version both speak (a launcher from before `hello` speaks only
// version 1). Every method is
// declared once here, with the schema of its params (checked by the
// launcher on every call) and of its result (checked by the handler on
// every answer): anyone who can run a pod with the launcher's labels can
// speak this protocol to the handler, so neither side trusts the other's
// bytes.

/** The version this release speaks; `hello` came with it. */
export const PROTOCOL_VERSION = 2;
/** The oldest version this release still speaks: the previous release's (0.1.0 spoke only 1). */
export const MIN_PROTOCOL_VERSION = 1;
/** Every version this release speaks, oldest first. */
export const PROTOCOL_VERSIONS: readonly number[] = Array.from(
  { length: PROTOCOL_VERSION - MIN_PROTOCOL_VERSION + 1 },
  (_, i) => MIN_PROTOCOL_VERSION + i,
);
/** The most versions a `hello` may offer. */
export const MAX_OFFERED_VERSIONS = 16;

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

const DOMAIN_STATES = [
  "NoDomain",
  "Running",
  "Blocked",
  "Paused",
  "Shutdown",
  "Shutoff",
  "Crashed",
  "PMSuspended",
] as const;

/** What the launcher knows about its domain. */
export const domainStatus = z.strictObject({
  /** libvirt's state: Running, Paused, Shutdown (shutting down), Shutoff, Crashed, or NoDomain before sync. */
  state: z.enum(DOMAIN_STATES),
  /** Why the domain is in its state: Migrated, a Shutoff domain that now runs on the migration's target. */
  reason: z.literal("Migrated").optional(),
  /** The domain type in use: kvm, or qemu for emulation. */
  domainType: z.enum(["kvm", "qemu"]).optional(),
  /** "frozen" while the guest's file systems are frozen through its agent (freeze). */
  fsFreezeStatus: z.literal("frozen").optional(),
  /**
   * Whether the access credentials given through the guest agent are in the guest, and if not why; absent before the
   * agent answered.
   */
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
  vcpus: z.array(
    z.strictObject({
      id: z.number().int().nonnegative(),
      state: z.enum(["OFFLINE", "RUNNING", "BLOCKED"]),
      timeNs: count,
      waitNs: count.optional(),
      delayNs: count.optional(),
    }),
  ),
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
  interfaces: z.array(
    z.strictObject({
      name: z.string(),
      rxBytes: count,
      rxPackets: count,
      rxErrors: count,
      rxDrops: count,
      txBytes: count,
      txPackets: count,
      txErrors: count,
      txDrops: count,
    }),
  ),
  disks: z.array(
    z.strictObject({
      name: z.string(),
      readBytes: count,
      readRequests: count,
      readTimeNs: count,
      writeBytes: count,
      writeRequests: count,
      writeTimeNs: count,
      flushRequests: count,
      flushTimeNs: count,
    }),
  ),
});
export type DomainStats = z.infer<typeof domainStats>;

const noParams = z.undefined();

/** The longest a `watch` waits for a change before it answers anyway, seconds. */
export const MAX_WATCH_SECONDS = 60;

/**
 * What a `watch` answers: the launcher's revision of its domain (it counts up on each change: libvirt's domain
 * events, the guest agent's coming and going, a call that changed the domain) and the domain's status then.
 */
export const domainChange = z.strictObject({ revision: z.number().int().nonnegative(), status: domainStatus });
export type DomainChange = z.infer<typeof domainChange>;

/**
 * How the source launcher migrates its domain (KubeVirt's migration options, as the handler takes them from the
 * migration's policy).
 */
const migrationUid = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/, "must be a migration's uid");

export const migrationOptions = z.strictObject({
  /** The VirtualMachineInstanceMigration's uid: one attempt per uid (asked again, the launcher answers its status). */
  migrationUid: migrationUid.optional(),
  /**
   * Allow switching to post-copy once the pre-copy has not finished within its completion time (VIR_MIGRATE_POSTCOPY).
   */
  postCopy: z.boolean().default(false),
  /**
   * Have QEMU throttle the guest's vCPUs when its memory is dirtied faster than it is sent (VIR_MIGRATE_AUTO_CONVERGE).
   */
  autoConverge: z.boolean().default(false),
  /** The bandwidth the migration may use, MiB/s; 0: unlimited. */
  bandwidthMiB: z.number().int().nonnegative().default(0),
  /**
   * Seconds allowed per GiB of memory and copied disks before the migration is aborted, or switched to post-copy
   * (KubeVirt's 150 by default); 0: no limit.
   */
  completionTimeoutPerGiB: z.number().int().nonnegative().default(150),
  /**
   * Seconds the data left may go without going down before the migration is taken for stuck and aborted (KubeVirt's
   * 150); 0: no limit.
   */
  progressTimeout: z.number().int().nonnegative().default(150),
  /** Also copy the disks of claims (which are otherwise taken for shared storage, ReadWriteMany, seen by both pods). */
  allowNonSharedDisks: z.boolean().default(false),
});
export type MigrationOptions = z.infer<typeof migrationOptions>;

const bytes = z.number().int().nonnegative();

/** What libvirt reports of a migration job (its job stats), in bytes, bytes/s and ms. */
export const migrationProgress = z.strictObject({
  elapsedMs: bytes,
  dataTotal: bytes.optional(),
  dataProcessed: bytes.optional(),
  dataRemaining: bytes.optional(),
  memoryTotal: bytes.optional(),
  memoryProcessed: bytes.optional(),
  memoryRemaining: bytes.optional(),
  /** The memory's transfer rate, bytes/s. */
  memoryBps: bytes.optional(),
  /** Pages dirtied per second. */
  dirtyRate: bytes.optional(),
  /** How many passes over the guest's memory the pre-copy has made. */
  iteration: bytes.optional(),
  diskTotal: bytes.optional(),
  diskProcessed: bytes.optional(),
  diskRemaining: bytes.optional(),
  /** While running, the downtime QEMU expects; once completed, the real one. */
  downtimeMs: bytes.optional(),
});
export type MigrationProgress = z.infer<typeof migrationProgress>;

/**
 * A launcher's migration: on the source the outgoing one it was asked for (None before), on a target the incoming
 * one it prepared for (Prepared, then Completed once the domain runs here).
 */
export const migrationStatus = z.strictObject({
  role: z.enum(["Source", "Target"]).optional(),
  /** The migration's uid, as the handler gave it. */
  migrationUid: migrationUid.optional(),
  phase: z.enum(["None", "Prepared", "Running", "Completed", "Failed"]),
  mode: z.enum(["PreCopy", "PostCopy"]).optional(),
  /** ISO 8601. */
  startTimestamp: z.string().optional(),
  endTimestamp: z.string().optional(),
  failureReason: z.string().optional(),
  /**
   * Set once an abort was asked for: InProgress, then Succeeded (the domain stays here) or Failed (it was too late).
   */
  abortStatus: z.enum(["InProgress", "Succeeded", "Failed"]).optional(),
  progress: migrationProgress.optional(),
});
export type MigrationStatus = z.infer<typeof migrationStatus>;

/**
 * What the source node's handler last read of a migration from its launcher, kept after the launcher is gone (the
 * switch-over's downtime is only known then): the handler answers it on its migration route (node-contract's
 * handlerRoutes) for the API to show.
 */
export const migrationReport = z.strictObject({
  namespace: z.string(),
  name: z.string(),
  /** ISO 8601: when the handler read it. */
  observed: z.string(),
  status: migrationStatus,
});
export type MigrationReport = z.infer<typeof migrationReport>;

/**
 * How many sent migrations' reports a handler keeps (the oldest go first), and for how long: after that it answers 404.
 */
export const KEPT_MIGRATION_REPORTS = 256;
export const MIGRATION_REPORT_RETENTION_MS = 60 * 60 * 1000;

interface MethodSpec {
  params: z.ZodType;
  /** Held to ANSWER_BOUNDS (bounds.ts): every string and list of a launcher's answer. */
  result: z.ZodType;
  /** How long the handler waits for the answer by default. */
  timeoutMs: number;
  /**
   * The protocol version that brought the method; 1 when absent. A launcher that speaks only older versions does not
   * know it (BadRequest, as an unknown method); the handler calls it only on a connection of that version or later.
   */
  since?: number;
}

const version = z.number().int().positive();

/** Every method of the protocol: its params, its result and how long an answer may take. */
export const launcherMethods = {
  /**
   * The handler's first call on a connection: the versions it speaks; the launcher answers the highest it speaks too,
   * or UnsupportedVersion when there is none. A launcher from before it answers BadRequest (an unknown method) and
   * speaks version 1.
   */
  hello: {
    params: z.strictObject({ versions: z.array(version).min(1).max(MAX_OFFERED_VERSIONS) }),
    result: bounded(z.strictObject({ version })),
    timeoutMs: 10_000,
    since: 2,
  },
  /** Defines and starts the domain of the VMI sent, if it is not running yet; idempotent. */
  sync: { params: virtualMachineInstance, result: bounded(domainStatus), timeoutMs: 60_000 },
  state: { params: noParams, result: bounded(domainStatus), timeoutMs: 10_000 },
  /**
   * Waits for the domain to change (KubeVirt's launcher pushes its domain's events to its handler): answers at once
   * when the launcher's revision is past `since`, else on the next change, or after `timeoutSeconds` with the same
   * revision. Added within version 1: a launcher from before it answers BadRequest (an unknown method), and its
   * handler asks for its state at an interval instead.
   */
  watch: {
    params: z.strictObject({
      since: z.number().int().nonnegative(),
      timeoutSeconds: z.number().int().min(1).max(MAX_WATCH_SECONDS),
    }),
    result: bounded(domainChange),
    timeoutMs: (MAX_WATCH_SECONDS + 15) * 1000,
  },
  pause: { params: noParams, result: bounded(domainStatus), timeoutMs: 30_000 },
  unpause: { params: noParams, result: bounded(domainStatus), timeoutMs: 30_000 },
  /**
   * Turns the domain off at once, as pulling its power (KubeVirt's KillVMI): a stop whose grace period ran out, or was
   * cut to 0.
   */
  kill: { params: noParams, result: bounded(domainStatus), timeoutMs: 30_000 },
  /** Asks the guest to reboot through ACPI. */
  softReboot: { params: noParams, result: bounded(domainStatus), timeoutMs: 30_000 },
  /** Resets the virtual machine at once, like a hardware reset. */
  reset: { params: noParams, result: bounded(domainStatus), timeoutMs: 30_000 },
  /** The guest's OS as its QEMU agent reports it; the launcher gives the agent 5 s. */
  guestOsInfo: { params: noParams, result: bounded(guestOsInfo), timeoutMs: 15_000 },
  /**
   * All the agent tells (KubeVirt's guestosinfo, userlist and filesystemlist); the launcher gives each of its queries 5
   * s.
   */
  guestAgentInfo: { params: noParams, result: bounded(guestAgentInfo), timeoutMs: 45_000 },
  /**
   * Freezes the guest's file systems through its agent; they thaw by themselves after unfreezeTimeoutSeconds (0:
   * never).
   */
  freeze: {
    params: z.strictObject({ unfreezeTimeoutSeconds: z.number().int().nonnegative() }),
    result: bounded(domainStatus),
    timeoutMs: 60_000,
  },
  /** Thaws the guest's file systems. */
  unfreeze: { params: noParams, result: bounded(domainStatus), timeoutMs: 60_000 },
  /** What libvirt counts of the running domain: CPU, vCPUs, memory, network and disks (the handler's VM metrics). */
  domainStats: { params: noParams, result: bounded(domainStats), timeoutMs: 10_000 },
  /**
   * Writes the display's screenshot, as PNG, into the sockets volume (SocketsVolume.screenshot): too big for a line.
   */
  screenshot: {
    params: noParams,
    result: bounded(z.strictObject({ bytes: z.number().int().positive() })),
    timeoutMs: 30_000,
  },
  /**
   * Makes the launcher tunnel to a TCP port of its guest (on its pod-network interface) through the socket
   * portForwardSocket names in the sockets volume, one connection to the guest per connection to it; idempotent.
   */
  portForward: {
    params: z.strictObject({ port: z.number().int().min(1).max(65535), protocol: z.enum(PORT_FORWARD_PROTOCOLS) }),
    result: bounded(z.strictObject({})),
    timeoutMs: 30_000,
  },
  /**
   * Readies a new launcher to receive the VMI's running domain from another node: its disks made at the paths the
   * source's domain uses (the same in every launcher pod), its libvirt reachable through MIGRATION_SOCKETS.libvirt in
   * the sockets volume. Defines nothing; idempotent.
   */
  prepareMigrationTarget: { params: virtualMachineInstance, result: bounded(migrationStatus), timeoutMs: 60_000 },
  /**
   * Starts migrating the domain live, peer to peer, to the launcher behind the sockets MIGRATION_SOCKETS names in this
   * launcher's sockets volume (the handler's proxy); answers at once, the progress is migrationState's. Idempotent
   * while one runs.
   */
  migrate: { params: migrationOptions, result: bounded(migrationStatus), timeoutMs: 30_000 },
  /** The migration's phase and libvirt's figures of it. */
  migrationState: { params: noParams, result: bounded(migrationStatus), timeoutMs: 10_000 },
  /** Aborts the outgoing migration (virDomainAbortJob); the domain keeps running here unless it was too late. */
  abortMigration: { params: noParams, result: bounded(migrationStatus), timeoutMs: 30_000 },
} as const satisfies Record<string, MethodSpec>;

export type Method = keyof typeof launcherMethods;
export const METHODS = Object.keys(launcherMethods) as Method[];
/** The version that brought a method. */
export const methodSince = (method: Method): number => (launcherMethods[method] as MethodSpec).since ?? 1;
/** The highest version both sides speak, if any. */
export function commonVersion(ours: readonly number[], theirs: readonly number[]): number | undefined {
  const common = ours.filter((v) => theirs.includes(v));
  return common.length > 0 ? Math.max(...common) : undefined;
}
/** Versions as people read them: "version 2", "versions 1 and 2", "versions 1 to 3". */
export function describeVersions(versions: readonly number[]): string {
  const sorted = [...new Set(versions)].sort((a, b) => a - b).map(String);
  if (sorted.length === 1) return `version ${sorted.join("")}`;
  const contiguous = sorted.every((v, i) => i === 0 || Number(v) === Number(sorted[i - 1]) + 1);
  if (contiguous && sorted.length > 2) return `versions ${sorted[0] ?? ""} to ${sorted.at(-1) ?? ""}`;
  return `versions ${sorted.slice(0, -1).join(", ")} and ${sorted.at(-1) ?? ""}`;
}
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
  z.strictObject({
    id,
    error: z.strictObject({ code: z.enum(ERROR_CODES), message: z.string().max(MAX_ERROR_MESSAGE_LENGTH) }),
  }),
]);
export type Response = { id: number; result: unknown } | { id: number; error: { code: ErrorCode; message: string } };

/** A zod error as one line: each problem with the path of what is wrong, below `root`. */
export function describeIssues(error: z.ZodError, root: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${[root, ...issue.path.map(String)].join(".")}: ${issue.message}`)
    .join("; ");
}
