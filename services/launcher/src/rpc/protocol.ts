import { z } from "zod";

// The launcher's RPC protocol, spoken by the handler over the unix socket in
// the launcher pod's sockets volume: one JSON object per line each way, a
// version on every request so that a handler and a launcher of different
// releases can tell they do not understand each other.

export const PROTOCOL_VERSION = 1;
/**
 * What the launcher keeps in its pod's sockets volume, for the handler: its
 * RPC socket, QEMU's serial console and VNC sockets, and the serial log.
 */
export const SocketsVolume = {
  launcher: "launcher.sock",
  serial: "virt-serial0",
  vnc: "virt-vnc",
  serialLog: "serial0.log",
  guestAgent: "guest-agent.sock",
} as const;
export const LAUNCHER_SOCKET = SocketsVolume.launcher;

export const METHODS = ["ping", "sync", "state", "pause", "unpause", "softReboot", "reset", "shutdown", "kill", "guestOsInfo"] as const;
export type Method = (typeof METHODS)[number];

export const requestSchema = z.object({
  version: z.number().int(),
  id: z.number().int(),
  method: z.enum(METHODS),
  params: z.unknown().optional(),
});
export type Request = z.infer<typeof requestSchema>;

export type Response = { id: number; result: unknown } | { id: number; error: { code: ErrorCode; message: string } };

export type ErrorCode = "BadRequest" | "UnsupportedVersion" | "NotDefined" | "Failed";

/** What the launcher knows about its domain. */
export interface DomainStatus {
  /** libvirt's state: Running, Paused, Shutdown (shutting down), Shutoff, Crashed, or NoDomain before sync. */
  state: "NoDomain" | "Running" | "Blocked" | "Paused" | "Shutdown" | "Shutoff" | "Crashed" | "PMSuspended";
  /** The domain type in use: kvm, or qemu for emulation. */
  domainType?: "kvm" | "qemu";
}

/** What the guest agent says of the guest's OS, in the names of KubeVirt's VMI status. */
export interface GuestOsInfo {
  id?: string;
  name?: string;
  prettyName?: string;
  version?: string;
  versionId?: string;
  kernelRelease?: string;
  kernelVersion?: string;
}
