import { describe, expect, it } from "vitest";
import { launcherDeviceLimits } from "./node-devices.ts";

describe("launcherDeviceLimits", () => {
  it("asks for KVM when emulation is not allowed, as KubeVirt", () => {
    expect(launcherDeviceLimits({ allowEmulation: false, tap: false })).toEqual({ "devices.kubevirt.io/kvm": "1" });
  });
  it("asks for no device when emulation is allowed and the guest has no pod network", () => {
    expect(launcherDeviceLimits({ allowEmulation: true, tap: false })).toEqual({});
  });
  it("asks for tun where the guest's interface is a tap on the pod network", () => {
    expect(launcherDeviceLimits({ allowEmulation: true, tap: true })).toEqual({ "devices.kubevirt.io/tun": "1" });
  });
});
