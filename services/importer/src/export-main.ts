import { EXPORT_SERVER_PORT, ExportEnv } from "@kubevirt-ts/node-contract";
import { runService } from "@kubevirt-ts/runtime";
import { exportEnv } from "./env.ts";
import { readMounted, startExportServer } from "./export-server.ts";

// The export server's process (export-server.ts): what the controller tells it, and its end at the export's deadline
// (its TTL), when it exits 0 and the export's phase becomes Terminated.

const env = exportEnv();

await runService({
  name: "export-server",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  start: async ({ log }) => {
    const server = await startExportServer({
      port: EXPORT_SERVER_PORT,
      volumes: env[ExportEnv.volumes],
      token: () => readMounted(env[ExportEnv.tokenFile]),
      tls: { cert: await readMounted(env[ExportEnv.certFile]), key: await readMounted(env[ExportEnv.keyFile]) },
      manifests: env[ExportEnv.manifests],
      log,
    });
    log.info("the export server is ready", {
      port: EXPORT_SERVER_PORT,
      volumes: env[ExportEnv.volumes].map((v) => v.name),
    });
    // Timers hold at most about 24.8 days; an export lives a week at most (MAX_EXPORT_TTL_HOURS).
    const left = Math.max(0, Date.parse(env[ExportEnv.deadline]) - Date.now());
    const ending = setTimeout(() => {
      log.info("the export's time is over");
      process.exit(0);
    }, left);
    return async () => {
      clearTimeout(ending);
      await new Promise((resolve) => server.close(resolve));
    };
  },
});
