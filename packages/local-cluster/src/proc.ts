import { readFile, readdir } from "node:fs/promises";

// This node's processes, read from /proc: one scan for cleanup, chaos and checks.

/** The processes (but this one) whose arguments the predicate accepts, with their arguments. */
export async function processesMatching(
  predicate: (argv: string[]) => boolean,
): Promise<{ pid: number; argv: string[] }[]> {
  const found: { pid: number; argv: string[] }[] = [];
  for (const entry of await readdir("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "")).split("\0").filter((a) => a !== "");
    if (argv.length > 0 && predicate(argv)) found.push({ pid, argv });
  }
  return found;
}
