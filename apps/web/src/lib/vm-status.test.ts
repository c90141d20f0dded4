import { describe, expect, it } from "vitest";
import { age, matchesStatusFilter, statusInWords } from "./vm-status";

describe("statusInWords", () => {
  it("says KubeVirt's statuses in words, a VM without status as stopped", () => {
    expect(statusInWords("ErrorUnschedulable")).toBe("Cannot be placed on a node");
    expect(statusInWords("CrashLoopBackOff")).toBe("Crashed, restarting after a pause");
    expect(statusInWords(undefined)).toBe("Stopped");
    expect(statusInWords("SomethingNew")).toBe("SomethingNew");
  });
});

describe("matchesStatusFilter", () => {
  it("filters by status, with Problem for every error state", () => {
    expect(matchesStatusFilter("Running", "Running")).toBe(true);
    expect(matchesStatusFilter("Stopped", "Running")).toBe(false);
    expect(matchesStatusFilter("ErrImagePull", "Problem")).toBe(true);
    expect(matchesStatusFilter("Running", "Problem")).toBe(false);
    expect(matchesStatusFilter(undefined, "")).toBe(true);
  });
});

describe("age", () => {
  it("reads like kubectl's AGE column", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    expect(age("2026-01-01T11:59:30Z", now)).toBe("30s");
    expect(age("2026-01-01T11:00:00Z", now)).toBe("1h");
    expect(age("2025-12-29T12:00:00Z", now)).toBe("3d");
  });
});
