import { writeFile } from "node:fs/promises";
import { IMPORT_PROGRESS_METRIC, ImporterEnv } from "@kubevirt-ts/kubevirt-api";
import { runService } from "@kubevirt-ts/runtime";
import { Gauge } from "prom-client";
import { env } from "./env.ts";
import { ImportError, importDisk } from "./import.ts";


// The importer: one pod per DataVolume being filled, as CDI's. It fills the
// claim, serves its progress on its port's /metrics (the percentage, as CDI's
// importer serves it, which the controller reads), and exits: 0
// when the disk is in, 1 with the reason as its termination message (the
// kubelet restarts it with back-off; the controller reports the reason).

/** Where the kubelet reads what a container says of its end. */
const TERMINATION_MESSAGE = "/dev/termination-log";

await runService({
  name: "importer",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  start: ({ log, registry }) => {
    const progress = new Gauge({ name: IMPORT_PROGRESS_METRIC, help: "How much of the DataVolume's source is in, in percent.", registers: [registry] });
    const started = Date.now();
    const basicAuth = env[ImporterEnv.accessKeyId] !== undefined ? { user: env[ImporterEnv.accessKeyId] ?? "", password: env[ImporterEnv.secretKey] ?? "" } : undefined;
    importDisk(
      {
        source: env[ImporterEnv.source],
        endpoint: env[ImporterEnv.endpoint],
        headers: env[ImporterEnv.extraHeaders],
        ...(basicAuth ? { basicAuth } : {}),
        diskBytes: env[ImporterEnv.diskBytes],
        targetDir: env[ImporterEnv.targetDir],
        sourceDir: env[ImporterEnv.sourceDir],
      },
      // The controller reads it and writes CDI's form (importProgress).
      (fraction) => {
        progress.set(fraction * 100);
      },
    ).then(
      (outcome) => {
        log.info("the disk is in", { outcome, seconds: Math.round((Date.now() - started) / 1000) });
        process.exit(0);
      },
      async (error: unknown) => {
        const message = error instanceof ImportError ? error.message : `the import failed: ${String(error)}`;
        log.error(message);
        await writeFile(TERMINATION_MESSAGE, message).catch(() => undefined);
        process.exit(1);
      },
    );
    // Nothing to stop: the import ends the process.
    return Promise.resolve(() => Promise.resolve());
  },
});
