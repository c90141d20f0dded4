import { z } from "zod";
import {
  type GuestAgentQuery,
  VmiConditionType,
  VmiPhase,
  guestOsInfo,
  type VirtualMachineInstance,
} from "@kubevirt-ts/kubevirt-api";

// What a guest's QEMU agent tells of it, in KubeVirt's types: the answer of
// the guestosinfo subresource (VirtualMachineInstanceGuestAgentInfo) and the
// two lists cut from it, userlist (VirtualMachineInstanceUserList) and
// filesystemlist (VirtualMachineInstanceFileSystemList). The launcher asks
// the agent; the handler and the API pass this on.

export const guestUser = z.object({
  userName: z.string(),
  domain: z.string().optional(),
  /** Seconds since the epoch, as the agent reports it. */
  loginTime: z.number().optional(),
});

export const guestFileSystem = z.object({
  diskName: z.string(),
  mountPoint: z.string(),
  fileSystemType: z.string(),
  usedBytes: z.number().int().nonnegative().optional(),
  totalBytes: z.number().int().nonnegative().optional(),
});

export const guestAgentInfo = z.object({
  guestAgentVersion: z.string().optional(),
  supportedCommands: z.array(z.object({ name: z.string(), enabled: z.boolean().optional() })).optional(),
  hostname: z.string().optional(),
  os: guestOsInfo.optional(),
  /** As KubeVirt writes it: "<zone>, <offset in seconds>". */
  timezone: z.string().optional(),
  userList: z.array(guestUser).optional(),
  fsInfo: z.object({ disks: z.array(guestFileSystem) }).optional(),
});
export type GuestAgentInfo = z.infer<typeof guestAgentInfo>;

/** The answer of a guest agent subresource, in KubeVirt's shape. */
export function guestAgentAnswer(info: GuestAgentInfo, query: GuestAgentQuery): unknown {
  switch (query) {
    case "guestosinfo":
      return info;
    case "userlist":
      return { metadata: {}, items: info.userList ?? [] };
    case "filesystemlist":
      return { metadata: {}, items: info.fsInfo?.disks ?? [] };
  }
}

/**
 * A Go duration as KubeVirt's API takes one ("5m", "1h30m", "90s", "300ms") in whole seconds; undefined when it is
 * none.
 */
export function parseDurationSeconds(text: string): number | undefined {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, µs: 1e-6, ns: 1e-9 };
  if (text === "0") return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/gu)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) return undefined;
  return Math.round(parts.reduce((sum, [, value, unit]) => sum + Number(value) * (units[unit ?? ""] ?? 0), 0));
}

/** KubeVirt's refusal of a guest agent query, or undefined: the VMI must run and its agent be connected. */
export function guestAgentRefusal(vmi: Pick<VirtualMachineInstance, "status">): string | undefined {
  if (vmi.status?.phase !== VmiPhase.Running)
    return `VMI is not running (phase ${vmi.status?.phase ?? VmiPhase.Pending})`;
  const connected = vmi.status.conditions?.some(
    (c) => c.type === VmiConditionType.AgentConnected && c.status === "True",
  );
  return connected ? undefined : "VMI does not have guest agent connected";
}
