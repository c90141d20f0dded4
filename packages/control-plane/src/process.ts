import { type ChildProcess, spawn } from "node:child_process";
import { openSync, readFileSync, closeSync } from "node:fs";

// Child processes of the control plane. Attached ones get the parent-death
// signal through setpriv, so they die with the test runner even when it is
// killed outright; detached ones (`make up`) outlive the command that starts
// them and are stopped through their PID files.

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  readonly exited: Promise<string>;
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  detached: boolean;
}

function exitPromise(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      resolve(signal ? `signal ${signal}` : `exit code ${String(code)}`);
    });
    child.once("error", (error) => {
      resolve(`spawn error: ${error.message}`);
    });
  });
}

export function spawnManaged(options: SpawnOptions): ManagedProcess {
  const fd = openSync(options.logFile, "a");
  const [command, args] = options.detached
    ? [options.command, options.args]
    : ["setpriv", ["--pdeathsig", "KILL", "--", options.command, ...options.args]];
  const child = spawn(command, args, { stdio: ["ignore", fd, fd], detached: options.detached });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${options.name} (${options.command})`);
  if (options.detached) child.unref();
  const exited = exitPromise(child);
  let done = false;
  void exited.then(() => (done = true));
  const pid = child.pid;
  return {
    name: options.name,
    pid,
    logFile: options.logFile,
    exited,
    async stop(graceMs = 10_000) {
      if (done) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The last lines of a log, for error messages. */
export function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
