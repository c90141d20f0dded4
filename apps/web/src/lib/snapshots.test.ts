import { describe, expect, it } from "vitest";
import {
  defaultSnapshotName,
  indicationBadges,
  newVmNameProblem,
  restoreState,
  snapshotSize,
  snapshotState,
} from "./snapshots";

describe("a VM's snapshots as its Snapshots tab reads them", () => {
  it("names a new snapshot after the VM and the moment, in UTC", () => {
    expect(defaultSnapshotName("web-1", new Date("2026-03-04T05:06:07.890Z"))).toBe("web-1-20260304-050607");
    expect(defaultSnapshotName("db", new Date("2026-12-31T23:59:59Z"))).toBe("db-20261231-235959");
  });

  it("shows indications as short badges, and an unknown one as it is", () => {
    expect(indicationBadges(["Online", "GuestAgent"]).map((b) => b.label)).toEqual(["Online", "Guest agent"]);
    expect(indicationBadges(["NoGuestAgent"])[0]?.title).toMatch(/as after a power cut/);
    // The meanings are vm-rules', as the controller writes them: beside Paused, NoGuestAgent says the guest was paused.
    expect(indicationBadges(["NoGuestAgent", "Paused"])[0]?.title).toMatch(/paused already/);
    expect(indicationBadges(["SomethingNew"])).toEqual([{ label: "SomethingNew", title: "SomethingNew" }]);
  });

  it.each([
    [{ phase: "Succeeded", readyToUse: true, error: undefined }, "Ready"],
    [{ phase: "InProgress", readyToUse: false, error: undefined }, "In progress"],
    [{ phase: "Failed", readyToUse: false, error: "the copy of root failed" }, "Failed: the copy of root failed"],
    [{ phase: "Deleting", readyToUse: true, error: undefined }, "Deleting"],
    [{ phase: "Pending", readyToUse: false, error: undefined }, "Pending"],
  ])("says the state of %j as %s", (row, words) => {
    expect(snapshotState(row)).toBe(words);
  });

  it("says a size in bytes, or a dash when it is unknown", () => {
    expect(snapshotSize(1536 * 1024 * 1024)).toBe("1.50 GiB");
    expect(snapshotSize(undefined)).toBe("—");
  });

  it("says how far a restore got", () => {
    expect(restoreState({ complete: true, failed: false, message: undefined })).toBe("Complete");
    expect(restoreState({ complete: false, failed: false, message: "copying root" })).toBe("In progress: copying root");
    expect(restoreState({ complete: false, failed: true, message: "no copy" })).toBe("Failed: no copy");
  });

  it("checks a new VM's name as it is typed", () => {
    const existing = new Set(["web-1"]);
    expect(newVmNameProblem("web-1-copy", existing)).toBeUndefined();
    expect(newVmNameProblem("Web_Copy", existing)).toMatch(/^The name must be a DNS label/);
    expect(newVmNameProblem("", existing)).toBe("The name must not be empty.");
    expect(newVmNameProblem("web-1", existing)).toBe("A VM named web-1 already exists here; choose another name.");
  });
});
