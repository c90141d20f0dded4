import { describe, expect, it } from "vitest";
import { createLogger } from "./log.ts";

function collect() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    component: "test",
    level: "info",
    write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>),
    now: () => new Date(0),
  });
  return { lines, log };
}

describe("createLogger", () => {
  it("writes one JSON object per line with time, level, component and fields", () => {
    const { lines, log } = collect();
    log.info("synced", { key: "ns/vm" });
    expect(lines).toEqual([
      { ts: "1970-01-01T00:00:00.000Z", level: "info", component: "test", msg: "synced", key: "ns/vm" },
    ]);
  });

  it("drops lines below its level", () => {
    const { lines, log } = collect();
    log.debug("noise");
    log.warn("kept");
    expect(lines.map((l) => l.msg)).toEqual(["kept"]);
  });

  it("adds a child's fields to each line and serializes errors", () => {
    const { lines, log } = collect();
    log.child({ vmi: "ns/a" }).error("failed", { error: new Error("boom") });
    expect(lines[0]).toMatchObject({ vmi: "ns/a", error: { message: "boom", name: "Error" } });
  });

  it("changes the level of the whole family, children made before and after", () => {
    const { lines, log } = collect();
    const child = log.child({ vmi: "ns/a" });
    child.debug("dropped");
    child.setLevel("debug");
    log.debug("parent");
    child.debug("child");
    log.child({ vmi: "ns/b" }).debug("later child");
    log.setLevel("warn");
    child.info("dropped again");
    expect(lines.map((l) => l.msg)).toEqual(["parent", "child", "later child"]);
    expect(child.level()).toBe("warn");
  });
});
