import { describe, expect, it } from "vitest";
import {
  NO_GUEST_AGENT_PAUSED_MEANING,
  SNAPSHOT_INDICATION_MEANINGS,
  indicationMeanings,
  restoreInPlaceAvailability,
  snapshotAvailability,
  snapshotRestorability,
} from "./snapshots.ts";

type Snapshot = Parameters<typeof snapshotRestorability>[0];
const snapshot = (status: Snapshot["status"], deleting = false): Snapshot => ({
  metadata: { name: "snap", ...(deleting && { deletionTimestamp: "2026-01-01T00:00:00Z" }) },
  status,
});
const ready = snapshot({ phase: "Succeeded", readyToUse: true });
const running = { status: { phase: "Running" } } as Parameters<typeof restoreInPlaceAvailability>[2];

describe("snapshots and restores of a VM, as the API refuses them and the dashboard disables them", () => {
  it.each([
    ["ready", ready, { available: true }],
    ["in progress", snapshot({ phase: "InProgress", readyToUse: false }), /not ready to use yet \(InProgress\)/],
    ["not yet seen by the controller", snapshot(undefined), /not ready to use yet \(not started\)/],
    ["failed", snapshot({ phase: "Failed", error: { message: "disk copy failed" } }), /failed: disk copy failed/],
    ["being deleted", snapshot({ phase: "Succeeded", readyToUse: true }, true), /being deleted/],
  ])("a snapshot %s is restorable or says why not", (_, theSnapshot, expected) => {
    const answer = snapshotRestorability(theSnapshot);
    if (expected instanceof RegExp)
      expect(answer).toMatchObject({ available: false, reason: expect.stringMatching(expected) as unknown });
    else expect(answer).toEqual(expected);
  });

  it("restores in place only onto a stopped VM with nothing else under way", () => {
    expect(restoreInPlaceAvailability(snapshotRestorability(ready), {}, undefined)).toEqual({ available: true });
    expect(restoreInPlaceAvailability(snapshotRestorability(ready), {}, running)).toMatchObject({
      available: false,
      by: "state",
      reason: expect.stringMatching(/^stop the VM first/) as unknown,
    });
    expect(
      restoreInPlaceAvailability(snapshotRestorability(ready), { status: { restoreInProgress: "r-1" } }, undefined),
    ).toMatchObject({
      available: false,
      reason: expect.stringContaining("restore r-1 of the VM is under way") as unknown,
    });
    // An unready snapshot says so first, whatever the VM is doing.
    expect(
      restoreInPlaceAvailability(snapshotRestorability(snapshot({ phase: "InProgress" })), {}, running),
    ).toMatchObject({
      reason: expect.stringContaining("not ready to use yet") as unknown,
    });
  });

  it("takes one snapshot of a VM at a time", () => {
    expect(snapshotAvailability({})).toEqual({ available: true });
    expect(snapshotAvailability({ status: { snapshotInProgress: "snap-1" } })).toMatchObject({
      available: false,
      reason: expect.stringContaining("snapshot snap-1 of the VM is under way") as unknown,
    });
  });
});

describe("what a snapshot's indications mean", () => {
  it("gives each indication its sentence, NoGuestAgent's beside Paused saying the guest was paused already", () => {
    expect(indicationMeanings(["Online", "NoGuestAgent"])).toEqual({
      Online: SNAPSHOT_INDICATION_MEANINGS.Online,
      NoGuestAgent: expect.stringContaining("as after a power cut") as unknown,
    });
    expect(indicationMeanings(["Online", "NoGuestAgent", "Paused"])).toEqual({
      Online: SNAPSHOT_INDICATION_MEANINGS.Online,
      NoGuestAgent: NO_GUEST_AGENT_PAUSED_MEANING,
      Paused: SNAPSHOT_INDICATION_MEANINGS.Paused,
    });
  });

  it("leaves out an indication it does not know, and never one named after Object's own keys", () => {
    expect(indicationMeanings(["SomethingNew", "constructor", "GuestAgent"])).toEqual({
      GuestAgent: SNAPSHOT_INDICATION_MEANINGS.GuestAgent,
    });
  });
});
