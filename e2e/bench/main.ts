import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cpus, hostname } from "node:os";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH } from "@kubevirt-ts/local-cluster";
import { formatComparison } from "./compare.ts";
import { debianFigure, consoleEchoFigure } from "./figures/guests.ts";
import { migrationFigures } from "./figures/migration.ts";
import { listFigure, sseFigure } from "./figures/dashboard.ts";
import { kwokFigures } from "./figures/kwok.ts";
import { startFigures } from "./figures/start.ts";
import { capacityFigures } from "./figures/capacity.ts";
import { idleFigures } from "./figures/idle.ts";
import { ratioFigures } from "./figures/ratio.ts";
import { benchEnv } from "./env.ts";
import { type Row, type Run, text } from "./results.ts";
import { readRun, runFiles, saveRun } from "./store.ts";

// `make bench`: every figure of the local cluster, one group at a time, each
// in a namespace of its own that is deleted before the next starts. Prints
// the table, keeps the run (.local/bench/*.json, docs/benchmarks.md) and the
// change against the last recorded run. Environment:
//   BENCH_ONLY=start-1,start-20,...  only these groups (names below)
//   BENCH_IDLE_SECONDS=300           the idle group's window
//   BENCH_KWOK=1                     also the KWOK scale run (hack/bench.sh builds KWOK and sets BENCH_KWOK_DIR)
//   BENCH_KWOK_NODES=50 BENCH_KWOK_VMIS=5000 BENCH_KWOK_TIMEOUT=1200 (seconds)
//   BENCH_LABEL=before               the run's name in the history
//   BENCH_RECORD=0                   print only: no JSON, no history

const groups: Record<string, () => Promise<Row[]>> = {
  "start-1": () => startFigures(1, { memory: false }),
  "start-20": () => startFigures(20, { memory: true }),
  "start-50": () => startFigures(50, { memory: false }),
  // A VMI against a plain pod of its launcher pod's shape, in the same run.
  "ratio-1": () => ratioFigures(1),
  "ratio-20": () => ratioFigures(20),
  idle: () => idleFigures(20, benchEnv.idleSeconds),
  capacity: capacityFigures,
  debian: debianFigure,
  console: consoleEchoFigure,
  sse: () => sseFigure(),
  list: () => listFigure(),
  // Needs two nodes: make up NODES=2.
  migration: migrationFigures,
};
if (benchEnv.kwok) {
  const dir = benchEnv.kwokDir;
  groups.kwok = () => {
    if (!dir)
      throw new Error(
        "BENCH_KWOK_DIR is not set: run the KWOK figures through `make bench " +
          "BENCH_KWOK=1`, which builds KWOK (hack/build-kwok.sh)",
      );
    return kwokFigures(dir, { nodes: benchEnv.kwokNodes, vmis: benchEnv.kwokVmis, timeoutS: benchEnv.kwokTimeoutS });
  };
}

const only = benchEnv.only;
const unknown = only?.filter((g) => !(g in groups)) ?? [];
if (unknown.length > 0) {
  console.error(
    `BENCH_ONLY names no such group: ${unknown.join(", ")}; the groups ` +
      `are ${Object.keys(groups).join(", ")} (kwok with BENCH_KWOK=1)`,
  );
  process.exit(2);
}
if (!existsSync(KUBECONFIG_PATH)) {
  console.error(`no local cluster (${KUBECONFIG_PATH} is missing): run make up first`);
  process.exit(2);
}

const git = (...args: string[]) => execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8" }).trim();
const run: Run = {
  date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  label: benchEnv.label,
  commit:
    git("rev-parse", "--short", "HEAD") +
    (git("status", "--porcelain", "--untracked-files=no") === "" ? "" : " (with uncommitted changes)"),
  host: `${hostname()}, ${String(cpus().length)} CPUs`,
  rows: [],
};

let failed = 0;
for (const [name, measure] of Object.entries(groups)) {
  if (only && !only.includes(name)) continue;
  const started = Date.now();
  console.log(`\n== ${name}`);
  try {
    const rows = await measure();
    run.rows.push(...rows);
    console.log(text({ ...run, rows }));
  } catch (error) {
    failed++;
    const message = error instanceof Error ? error.message : String(error);
    console.error(`[bench] ${name} failed: ${message}`);
    run.rows.push({
      id: `${name}.failed`,
      figure: `${name}: not measured`,
      unit: "",
      values: { value: null },
      method: "",
      note: message,
    });
  }
  console.log(`   (${String(Math.round((Date.now() - started) / 1000))} s)`);
}

console.log(`\n== ${run.date} — ${run.label}\n${text(run)}`);
if (benchEnv.record) {
  const previous = (await runFiles()).at(-1);
  const file = await saveRun(run, { history: true });
  console.log(`\nrecorded: ${file} and docs/benchmarks.md`);
  if (previous)
    console.log(`\nchange against the last recorded run:\n${formatComparison(await readRun(previous), run)}`);
}
process.exit(failed > 0 ? 1 : 0);
