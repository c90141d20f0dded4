import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Starting a Node process takes seconds when CI runs lint, typecheck and
// tests side by side on two cores, so this test waits longer than vitest's 5 s.
const startupTimeout = 45_000;

function startFixture(...args: string[]) {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL("../test/fixture-service.ts", import.meta.url)), ...args],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let output = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (output += chunk));
  return {
    child,
    output: () => output,
    lines: () =>
      output
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { msg: string; level: string; component: string; error?: { message: string } }),
  };
}

describe("runService", () => {
  it("stops its work and exits 0 on SIGTERM", { timeout: startupTimeout + 15_000 }, async () => {
    const { child, output } = startFixture();
    await expect.poll(output, { timeout: startupTimeout }).toContain('"msg":"working"');

    child.kill("SIGTERM");
    const [code] = (await once(child, "exit")) as [number | null];

    expect(code).toBe(0);
    const messages = output()
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages.slice(-3)).toEqual(["stopping", "work stopped", "stopped"]);
  });

  it.each([
    ["throw", "uncaught exception; exiting", "a bug in the work"],
    ["reject", "unhandled promise rejection; exiting", "a forgotten promise"],
  ])(
    "on a bug nothing caught (%s), logs it with the component's name and exits 1",
    { timeout: startupTimeout + 15_000 },
    async (failure, msg, message) => {
      const { child, lines } = startFixture(failure);
      const [code] = (await once(child, "exit")) as [number | null];
      expect(code).toBe(1);
      expect(lines().at(-1)).toMatchObject({ level: "error", component: "fixture", msg, error: { message } });
    },
  );
});
