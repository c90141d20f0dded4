import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";

/** Runs a command, streaming nothing; throws with the end of its output when it fails. */
export function run(
  command: string,
  args: string[],
  options: { progress?: (line: string) => void } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-8000);
      if (options.progress) for (const line of chunk.split("\n")) if (line.trim()) options.progress(line.trim());
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(
            `${command} ${args.slice(0, 4).join(" ")}… exited ` +
              `with ${String(code)}: ${stderr.trim().split("\n").slice(-10).join("\n")}`,
          ),
        );
    });
  });
}

export function log(message: string): void {
  process.stderr.write(`[images] ${message}\n`);
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
