import { writeFile } from "node:fs/promises";
import { IMPORT_PROGRESS_METRIC, ImporterEnv, UPLOAD_SERVER_PORT } from "@kubevirt-ts/node-contract";
import { runService } from "@kubevirt-ts/runtime";
import { Gauge } from "prom-client";
import { importerEnv } from "./env.ts";
import { mountedCertificates, mountedHeaders, redirectDenyList } from "./http-source.ts";
import { ImportError, diskIsIn, importDisk } from "./import.ts";
import { startUploadServer } from "./upload.ts";

// The importer: one pod per DataVolume being filled, as CDI's. It fills the
// claim (or, for an upload, serves the upload server of upload.ts until an
// upload is in), serves its progress on its port's /metrics (the percentage, as CDI's
// importer serves it, which the controller reads), and exits: 0
// when the disk is in, 1 with the reason as its termination message (the
// kubelet restarts it with back-off; the controller reports the reason).

/** Where the kubelet reads what a container says of its end. */
const TERMINATION_MESSAGE = "/dev/termination-log";

const env = importerEnv();

await runService({
  name: "importer",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  start: ({ log, registry }) => {
    const progress = new Gauge({
      name: IMPORT_PROGRESS_METRIC,
      help: "How much of the DataVolume's source is in, in percent.",
      registers: [registry],
    });
    const started = Date.now();
    const succeeded = (outcome: string) => {
      log.info("the disk is in", { outcome, seconds: Math.round((Date.now() - started) / 1000) });
      process.exit(0);
    };
    const failed = async (error: unknown) => {
      const message = error instanceof ImportError ? error.message : `the import failed: ${String(error)}`;
      log.error(message);
      await writeFile(TERMINATION_MESSAGE, message).catch(() => undefined);
      process.exit(1);
    };
    // The controller reads it and writes CDI's form (importProgress).
    const report = (fraction: number) => {
      progress.set(fraction * 100);
    };
    const source = env[ImporterEnv.source];
    const target = { diskBytes: env[ImporterEnv.diskBytes], targetDir: env[ImporterEnv.targetDir] };
    if (source === "upload") {
      // Ready once it listens (the pod's readiness probe); it ends when an upload is in.
      void diskIsIn(target.targetDir)
        .then(async (already) => {
          if (already) return succeeded("already there");
          const key = env[ImporterEnv.uploadKey];
          if (key === "") throw new ImportError(`the upload server has no key: ${ImporterEnv.uploadKey} is empty`);
          await startUploadServer({
            port: UPLOAD_SERVER_PORT,
            key,
            ...target,
            report,
            log,
            done: (outcome) => void (outcome.ok ? succeeded("uploaded") : failed(outcome.error)),
          });
          log.info("the upload server is ready", { port: UPLOAD_SERVER_PORT });
        })
        .catch(failed);
    } else {
      const basicAuth =
        env[ImporterEnv.accessKeyId] !== undefined
          ? { user: env[ImporterEnv.accessKeyId] ?? "", password: env[ImporterEnv.secretKey] ?? "" }
          : undefined;
      const certDir = env[ImporterEnv.certDir];
      const headersDir = env[ImporterEnv.secretHeadersDir];
      void Promise.all([
        certDir ? mountedCertificates(certDir) : undefined,
        headersDir ? mountedHeaders(headersDir) : [],
      ])
        .then(([ca, secretHeaders]) =>
          importDisk(
            {
              source,
              endpoint: env[ImporterEnv.endpoint],
              headers: [...env[ImporterEnv.extraHeaders], ...secretHeaders],
              ca,
              ...(basicAuth ? { basicAuth } : {}),
              ...target,
              sourceDir: env[ImporterEnv.sourceDir],
              sourceInUse: env[ImporterEnv.sourceInUse],
              redirectDenyList: redirectDenyList(env.KUBERNETES_SERVICE_HOST),
            },
            report,
          ),
        )
        .then(succeeded, failed);
    }
    // Nothing to stop: the import ends the process.
    return Promise.resolve(() => Promise.resolve());
  },
});
