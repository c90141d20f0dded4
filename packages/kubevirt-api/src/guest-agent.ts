import { z } from "zod";
import { type GuestAgentQuery, VmiConditionType, VmiPhase } from "./constants.ts";
import { guestOsInfo } from "./schema/vmi.ts";
import type { VirtualMachineInstance } from "./schema/vmi.ts";

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

/** KubeVirt's refusal of a guest agent query, or undefined: the VMI must run and its agent be connected. */
export function guestAgentRefusal(vmi: Pick<VirtualMachineInstance, "status">): string | undefined {
  if (vmi.status?.phase !== VmiPhase.Running) return `VMI is not running (phase ${vmi.status?.phase ?? VmiPhase.Pending})`;
  const connected = vmi.status.conditions?.some((c) => c.type === VmiConditionType.AgentConnected && c.status === "True");
  return connected ? undefined : "VMI does not have guest agent connected";
}
