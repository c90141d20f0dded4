import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { LOCAL_DIR } from "@kubevirt-ts/local-cluster";
import { type Run, markdown, summarized } from "./results.ts";

// Where runs are kept: one JSON file per run under .local/bench/ (named by
// its date, so they sort in time), and the dated tables in docs/benchmarks.md.

export const RESULTS_DIR = join(LOCAL_DIR, "bench");
export const HISTORY_FILE = join(REPO_ROOT, "docs", "benchmarks.md");

/** The recorded runs' files, oldest first. */
export async function runFiles(): Promise<string[]> {
  const names = await readdir(RESULTS_DIR).catch(() => [] as string[]);
  return names
    .filter((n) => n.endsWith(".json"))
    .sort()
    .map((n) => join(RESULTS_DIR, n));
}

export async function readRun(file: string): Promise<Run> {
  return JSON.parse(await readFile(file, "utf8")) as Run;
}

/**
 * Writes the run's JSON, brings the summary up to date and appends the run's table to the history; resolves with the
 * JSON's path.
 */
export async function saveRun(run: Run, options: { history: boolean }): Promise<string> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${run.date.replaceAll(":", "-")}.json`);
  await writeFile(file, `${JSON.stringify(run, null, 2)}\n`);
  if (options.history) {
    await writeFile(HISTORY_FILE, `${summarized(await readFile(HISTORY_FILE, "utf8"), run)}\n${markdown(run)}`);
  }
  return file;
}
