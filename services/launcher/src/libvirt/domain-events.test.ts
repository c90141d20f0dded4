import { describe, expect, it } from "vitest";
import { changesStatus, parseEventLine } from "./domain-events.ts";

describe("a line of virsh's event stream", () => {
  it("is read as libvirt's event type, the domain and what virsh says of it", () => {
    expect(parseEventLine("event 'lifecycle' for domain 'test_tiny': Stopped Shutdown")).toEqual({
      type: "lifecycle",
      domain: "test_tiny",
      detail: "Stopped Shutdown",
    });
    expect(parseEventLine("event 'reboot' for domain 'test_tiny'\n")).toEqual({
      type: "reboot",
      domain: "test_tiny",
      detail: "",
    });
    // virsh prints a job-completed event's parameters on lines of their own, after a colon.
    expect(parseEventLine("event 'job-completed' for domain 'test_tiny':\n")).toEqual({
      type: "job-completed",
      domain: "test_tiny",
      detail: "",
    });
    expect(
      parseEventLine("event 'agent-lifecycle' for domain 'a': state: 'connected' reason: 'channel event'"),
    ).toEqual({
      type: "agent-lifecycle",
      domain: "a",
      detail: "state: 'connected' reason: 'channel event'",
    });
  });

  it("is nothing when it is not an event", () => {
    expect(parseEventLine("")).toBeUndefined();
    expect(parseEventLine("events received: 3")).toBeUndefined();
    expect(parseEventLine("error: Disconnected from qemu:///session due to end of file")).toBeUndefined();
  });

  it("counts as a change of the domain's status only for the events that can change it", () => {
    const event = (type: string) => ({ type, domain: "d", detail: "" });
    expect(
      ["lifecycle", "reboot", "agent-lifecycle", "control-error", "job-completed"].map((t) => changesStatus(event(t))),
    ).toEqual([true, true, true, true, true]);
    expect(changesStatus(event("rtc-change"))).toBe(false);
    expect(changesStatus(event("balloon-change"))).toBe(false);
  });
});
