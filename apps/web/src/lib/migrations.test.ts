import { describe, expect, it } from "vitest";
import { type MigrationFigures, describeFigures } from "./migrations";

const base: MigrationFigures = {
  observed: "2026-11-26T20:00:00Z",
  phase: "Running",
  elapsedMs: 1200,
  dataTotal: undefined,
  dataProcessed: undefined,
  dataRemaining: undefined,
  memoryBytesPerSecond: undefined,
  iteration: undefined,
  downtimeMs: undefined,
  expectedDowntimeMs: undefined,
};
const MiB = 1024 * 1024;

describe("a migration's figures", () => {
  it(
    "read, while it runs, what was sent and is left, the rate, the pass and the " +
      "downtime QEMU expects, and the share copied",
    () => {
      const view = describeFigures({
        ...base,
        dataTotal: 512 * MiB,
        dataProcessed: 200 * MiB,
        dataRemaining: 384 * MiB,
        memoryBytesPerSecond: 32 * MiB,
        iteration: 1,
        expectedDowntimeMs: 300,
      });
      expect(view.line).toBe(
        "200 MiB sent, 384 MiB left of 512 MiB, at 32.0 MiB/s, pass 2 over memory, downtime expected 300 ms",
      );
      expect(view.copied).toBe(0.25);
      expect(view.downtime).toBeUndefined();
    },
  );

  it("say so when the job has no figures yet, and never a share above the whole", () => {
    expect(describeFigures(base)).toEqual({ line: "Sending; no figures yet.", copied: undefined, downtime: undefined });
    expect(describeFigures({ ...base, dataTotal: 10, dataRemaining: 0 }).copied).toBe(1);
  });

  it("read, once completed, what was sent in all and in how long, and the real downtime", () => {
    expect(
      describeFigures({ ...base, phase: "Completed", elapsedMs: 12_400, dataProcessed: 70 * MiB, downtimeMs: 42 }),
    ).toEqual({ line: "Sent 70.0 MiB in 12.4 s.", copied: undefined, downtime: "42 ms" });
  });

  it("read, once failed, what had been sent, with no downtime: the guest never switched", () => {
    expect(describeFigures({ ...base, phase: "Failed", elapsedMs: 900, dataProcessed: 3 * MiB })).toEqual({
      line: "Had sent 3.00 MiB in 900 ms.",
      copied: undefined,
      downtime: undefined,
    });
  });
});
