import { describe, expect, it } from "vitest";
import { launcherDeviceLimits } from "./node-devices.ts";

describe("launcherDeviceLimits", () => {
  it("asks for KVM when emulation is not allowed, as KubeVirt", () => {
    expect(launcherDeviceLimits(false)).toEqual({ "devices.kubevirt.io/kvm": "1" });
  });
  it("asks for no device when emulation is allowed", () => {
    expect(launcherDeviceLimits(true)).toEqual({});
  });
});
