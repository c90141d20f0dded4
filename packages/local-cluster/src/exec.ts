import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** Runs a command; throws with its stderr when it fails. */
export async function run(command: string, args: string[], input?: string): Promise<string> {
  try {
    const child = execFileAsync(command, args, { maxBuffer: 64 << 20 });
    if (input !== undefined) {
      child.child.stdin?.end(input);
    }
    return (await child).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${command} ${args.join(" ")} failed${stderr ? `: ${stderr}` : ""}`, { cause: error });
  }
}

/** Runs a command whose failure is expected in some states (e.g. deleting what is not there). */
export async function tryRun(command: string, args: string[], input?: string): Promise<string | undefined> {
  try {
    return await run(command, args, input);
  } catch {
    return undefined;
  }
}

export function log(message: string): void {
  process.stderr.write(`[cluster] ${message}\n`);
}
