import { describe, expect, it } from "vitest";
import { guestAgentAnswer, guestAgentRefusal, parseDurationSeconds } from "./guest-agent.ts";

const info = {
  guestAgentVersion: "7.2.0",
  hostname: "debian",
  userList: [{ userName: "tester", loginTime: 1_700_000_000.5 }],
  fsInfo: { disks: [{ diskName: "vda1", mountPoint: "/", fileSystemType: "ext4", usedBytes: 1, totalBytes: 2 }] },
};

describe("guest agent subresources", () => {
  it("answer guestosinfo whole, and userlist and filesystemlist as KubeVirt's lists", () => {
    expect(guestAgentAnswer(info, "guestosinfo")).toBe(info);
    expect(guestAgentAnswer(info, "userlist")).toEqual({
      metadata: {},
      items: [{ userName: "tester", loginTime: 1_700_000_000.5 }],
    });
    expect(guestAgentAnswer(info, "filesystemlist")).toEqual({ metadata: {}, items: info.fsInfo.disks });
    expect(guestAgentAnswer({}, "userlist")).toEqual({ metadata: {}, items: [] });
  });

  it("are refused unless the VMI runs with its agent connected, in KubeVirt's words", () => {
    expect(guestAgentRefusal({ status: { phase: "Scheduled" } })).toBe("VMI is not running (phase Scheduled)");
    expect(
      guestAgentRefusal({ status: { phase: "Running", conditions: [{ type: "AgentConnected", status: "False" }] } }),
    ).toBe("VMI does not have guest agent connected");
    expect(
      guestAgentRefusal({ status: { phase: "Running", conditions: [{ type: "AgentConnected", status: "True" }] } }),
    ).toBeUndefined();
  });
});

describe("Go durations, as KubeVirt's freeze takes its unfreezeTimeout", () => {
  it("are read in whole seconds, and anything else is none", () => {
    expect([
      parseDurationSeconds("5m"),
      parseDurationSeconds("5m0s"),
      parseDurationSeconds("1h30m"),
      parseDurationSeconds("90s"),
      parseDurationSeconds("0"),
      parseDurationSeconds("1500ms"),
    ]).toEqual([300, 300, 5400, 90, 0, 2]);
    for (const bad of ["", "5", "5 m", "-5m", "five minutes", "5mx"]) expect(parseDurationSeconds(bad)).toBeUndefined();
  });
});
