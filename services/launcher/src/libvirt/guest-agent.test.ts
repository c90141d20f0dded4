import { describe, expect, it } from "vitest";
import { guestAgentInfoOf, osInfoOf } from "./guest-agent.ts";

// Answers as Debian 12's qemu-guest-agent (7.2) gives them.
const answers = {
  "guest-info": {
    version: "7.2.0",
    supported_commands: [
      { name: "guest-get-users", enabled: true, "success-response": true },
      { name: "guest-exec", enabled: false, "success-response": true },
    ],
  },
  "guest-get-host-name": { "host-name": "debian" },
  "guest-get-osinfo": {
    name: "Debian GNU/Linux",
    "kernel-release": "6.1.0-28-cloud-amd64",
    version: "12 (bookworm)",
    "pretty-name": "Debian GNU/Linux 12 (bookworm)",
    "version-id": "12",
    "kernel-version": "#1 SMP",
    machine: "x86_64",
    id: "debian",
  },
  "guest-get-timezone": { zone: "UTC", offset: 0 },
  "guest-get-users": [{ user: "tester", "login-time": 1_700_000_000.25 }],
  "guest-get-fsinfo": [
    { name: "vda1", mountpoint: "/", type: "ext4", "used-bytes": 1_048_576, "total-bytes": 2_097_152, disk: [] },
    { name: "nameless", type: "tmpfs" },
  ],
};

describe("the guest agent's answers in KubeVirt's names", () => {
  it("map every field KubeVirt's guestosinfo has", () => {
    expect(guestAgentInfoOf(answers)).toEqual({
      guestAgentVersion: "7.2.0",
      supportedCommands: [
        { name: "guest-get-users", enabled: true },
        { name: "guest-exec", enabled: false },
      ],
      hostname: "debian",
      os: {
        id: "debian",
        name: "Debian GNU/Linux",
        prettyName: "Debian GNU/Linux 12 (bookworm)",
        version: "12 (bookworm)",
        versionId: "12",
        kernelRelease: "6.1.0-28-cloud-amd64",
        kernelVersion: "#1 SMP",
        machine: "x86_64",
      },
      timezone: "UTC, 0",
      userList: [{ userName: "tester", loginTime: 1_700_000_000.25 }],
      // A file system without a mount point is left out, as it names nothing a user could find.
      fsInfo: {
        disks: [
          { diskName: "vda1", mountPoint: "/", fileSystemType: "ext4", usedBytes: 1_048_576, totalBytes: 2_097_152 },
        ],
      },
    });
  });

  it("leave out what the agent did not answer, and keep an empty list empty", () => {
    expect(guestAgentInfoOf({ "guest-info": { version: "5.2.0" }, "guest-get-users": [] })).toEqual({
      guestAgentVersion: "5.2.0",
      supportedCommands: [],
      userList: [],
    });
    expect(osInfoOf(undefined)).toEqual({});
  });
});
