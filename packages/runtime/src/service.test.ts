import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

describe("runService", () => {
  it("stops its work and exits 0 on SIGTERM", async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL("../test/fixture-service.ts", import.meta.url))], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => (output += chunk));
    await expect.poll(() => output, { timeout: 10_000 }).toContain('"msg":"working"');

    child.kill("SIGTERM");
    const [code] = (await once(child, "exit")) as [number | null];

    expect(code).toBe(0);
    const messages = output.trim().split("\n").map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages.slice(-3)).toEqual(["stopping", "work stopped", "stopped"]);
  });
});
