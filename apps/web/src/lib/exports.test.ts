import { describe, expect, it } from "vitest";
import { exportState } from "./exports";

describe("exportState", () => {
  it("says the phase, and why an export waits", () => {
    expect(exportState({ phase: "Ready", message: undefined })).toBe("Ready to download");
    expect(exportState({ phase: "Pending", message: "Virtual Machine ns/vm is running" })).toBe(
      "Pending: Virtual Machine ns/vm is running",
    );
    expect(exportState({ phase: "Terminated", message: "PodCompleted" })).toBe("Ended: PodCompleted");
  });
});
