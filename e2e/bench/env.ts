// What `make bench` reads from the environment (see hack/bench.sh).

const read = (name: string, fallback: string) => process.env[name] ?? fallback;

function count(name: string, fallback: number): number {
  const value = Number(read(name, String(fallback)));
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${name} must be a whole number of at least 1, not ${JSON.stringify(process.env[name])}`);
  return value;
}

export const benchEnv = {
  /** BENCH_ONLY=start-1,sse: only these groups. */
  only: process.env.BENCH_ONLY?.split(",")
    .map((g) => g.trim())
    .filter((g) => g !== ""),
  /** BENCH_KWOK=1: also the controller at scale on KWOK's fake nodes. */
  kwok: read("BENCH_KWOK", "0") === "1",
  /** The folder hack/build-kwok.sh printed: the kwok binary and its stages. */
  kwokDir: process.env.BENCH_KWOK_DIR,
  kwokNodes: count("BENCH_KWOK_NODES", 50),
  kwokVmis: count("BENCH_KWOK_VMIS", 5000),
  /** Seconds the KWOK run may take from its first create until every VMI is Scheduled. */
  kwokTimeoutS: count("BENCH_KWOK_TIMEOUT", 1200),
  /** Seconds the idle group measures its idle VMs' CPU over (5 minutes; less for trying it). */
  idleSeconds: count("BENCH_IDLE_SECONDS", 300),
  /** The run's name in the history, e.g. "before" or "after". */
  label: read("BENCH_LABEL", "run"),
  /** BENCH_RECORD=0: print only, keep nothing. */
  record: read("BENCH_RECORD", "1") !== "0",
};
