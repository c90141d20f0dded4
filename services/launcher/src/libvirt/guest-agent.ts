import type { GuestAgentInfo } from "@kubevirt-ts/vm-rules";
import type { GuestOsInfo } from "@kubevirt-ts/kubevirt-api";

// The QEMU guest agent's answers, in KubeVirt's names: each command's
// `return` as the agent gives it (qemu-ga's QAPI schema), mapped here, pure,
// so that what the agent may leave out is simply left out.

type AgentObject = Record<string, unknown>;

/** The commands asked for KubeVirt's guest agent info, and the answer each gave (undefined: not answered). */
export const AGENT_COMMANDS = [
  "guest-info",
  "guest-get-host-name",
  "guest-get-osinfo",
  "guest-get-timezone",
  "guest-get-users",
  "guest-get-fsinfo",
] as const;
export type AgentAnswers = Partial<Record<(typeof AGENT_COMMANDS)[number], unknown>>;

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined;
const objects = (value: unknown): AgentObject[] =>
  Array.isArray(value) ? value.filter((v): v is AgentObject => typeof v === "object" && v !== null) : [];
const object = (value: unknown): AgentObject =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as AgentObject) : {};

/** The object without its undefined fields: what the agent did not tell is left out, not sent as null. */
function withoutUndefined<T extends object>(value: T): T {
  const entries: [string, unknown][] = Object.entries(value);
  return Object.fromEntries(entries.filter(([, v]) => v !== undefined)) as T;
}

/** guest-get-osinfo's answer as the VMI status's guestOSInfo. */
export function osInfoOf(answer: unknown): GuestOsInfo {
  const os = object(answer);
  const info = {
    id: text(os.id),
    name: text(os.name),
    prettyName: text(os["pretty-name"]),
    version: text(os.version),
    versionId: text(os["version-id"]),
    kernelRelease: text(os["kernel-release"]),
    kernelVersion: text(os["kernel-version"]),
    machine: text(os.machine),
  };
  return withoutUndefined(info);
}

export function guestAgentInfoOf(answers: AgentAnswers): GuestAgentInfo {
  const info = object(answers["guest-info"]);
  const zone = object(answers["guest-get-timezone"]);
  const users = answers["guest-get-users"];
  const filesystems = answers["guest-get-fsinfo"];
  const result: GuestAgentInfo = {
    guestAgentVersion: text(info.version),
    supportedCommands: objects(info.supported_commands).flatMap((c) =>
      typeof c.name === "string" ? [{ name: c.name, enabled: c.enabled === true }] : [],
    ),
    hostname: text(object(answers["guest-get-host-name"])["host-name"]),
    os: answers["guest-get-osinfo"] === undefined ? undefined : osInfoOf(answers["guest-get-osinfo"]),
    // KubeVirt's form: the zone's name (when the guest has one) and its offset from UTC in seconds.
    timezone: typeof zone.offset === "number" ? `${text(zone.zone) ?? ""}, ${String(zone.offset)}` : undefined,
    userList:
      users === undefined
        ? undefined
        : objects(users).flatMap((u) =>
            typeof u.user === "string"
              ? [
                  {
                    userName: u.user,
                    ...(text(u.domain) ? { domain: text(u.domain) } : {}),
                    ...(typeof u["login-time"] === "number" ? { loginTime: u["login-time"] } : {}),
                  },
                ]
              : [],
          ),
    fsInfo:
      filesystems === undefined
        ? undefined
        : {
            disks: objects(filesystems).flatMap((fs) => {
              const [diskName, mountPoint, fileSystemType] = [text(fs.name), text(fs.mountpoint), text(fs.type)];
              if (diskName === undefined || mountPoint === undefined || fileSystemType === undefined) return [];
              const usedBytes = count(fs["used-bytes"]);
              const totalBytes = count(fs["total-bytes"]);
              return [
                {
                  diskName,
                  mountPoint,
                  fileSystemType,
                  ...(usedBytes !== undefined ? { usedBytes } : {}),
                  ...(totalBytes !== undefined ? { totalBytes } : {}),
                },
              ];
            }),
          },
  };
  return withoutUndefined(result);
}
