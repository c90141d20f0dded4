import { formatComparison } from "./compare.ts";
import { readRun, runFiles } from "./store.ts";

// Prints the change of every figure between two recorded runs:
//   node e2e/bench/compare-runs.ts                  the last run against the one before it
//   node e2e/bench/compare-runs.ts <before.json> <after.json>

const [beforeFile, afterFile] = process.argv.length >= 4 ? process.argv.slice(2, 4) : (await runFiles()).slice(-2);
if (beforeFile === undefined || afterFile === undefined) {
  console.error(
    "fewer than two recorded runs under .local/bench/: run `make bench` (twice) first, or name two result files",
  );
  process.exit(2);
}
console.log(formatComparison(await readRun(beforeFile), await readRun(afterFile)));
